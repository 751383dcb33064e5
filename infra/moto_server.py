"""moto's server, with requests applied one at a time.

DynamoDB applies the writes to one item one after another, so an update
expression such as list_append never loses a concurrent update. moto's
threaded server runs requests side by side without a lock and can lose them,
which would make concurrency tests fail for the emulator's sake. This
launcher keeps moto's app and wire protocols and serializes request handling;
clients may still send concurrently.

SQS requests are left out of the lock: a long-polling ReceiveMessage waits
inside the request, and holding the lock for it would stall every DynamoDB
and KMS call behind an idle queue.
"""

import argparse
import os
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=5055)
    args = parser.parse_args()

    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    # MOTO_LOG_TARGETS=1 logs each request's operation (X-Amz-Target), to
    # count what a flow costs in DynamoDB, KMS and SQS requests.
    log_targets = os.environ.get("MOTO_LOG_TARGETS") == "1"

    def serialized(environ, start_response):
        if log_targets:
            print("target", environ.get("HTTP_X_AMZ_TARGET", "-"), file=sys.stderr, flush=True)
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("AmazonSQS."):
            return app(environ, start_response)
        with lock:
            # Drain the response inside the lock: the write happens while
            # the body is produced.
            return list(app(environ, start_response))

    run_simple(args.host, args.port, serialized, threaded=True)


if __name__ == "__main__":
    main()
