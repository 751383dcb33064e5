//! The server's pages, written out whole: the consent page, the page that
//! forgets remembered approvals, a notice, and the error page a request
//! gets when it cannot be sent back to its client.
//! Plain HTML forms with inline style: they work without JavaScript and
//! load nothing from anywhere (`responses::page` sends them under a CSP
//! that forbids both).

use http::StatusCode;

use crate::{
    clients::{Client, redirect::Destination},
    responses,
};

/// `text` safe inside HTML text and double-quoted attributes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}\
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.4rem 1rem}dt{font-weight:600}\
dd{margin:0;word-break:break-all}.warn{background:#fff4ce;border:1px solid #e0c35a;padding:.6rem .8rem;border-radius:4px}\
.unverified{color:#8a3b00}button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.6rem;border-radius:4px;border:1px solid #666}\
button[value=approve]{background:#1d5fd1;color:#fff;border-color:#1d5fd1}";

fn document(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
<title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>",
        escape(title)
    )
}

/// What the consent page shows and carries.
pub struct Consent<'a> {
    /// The client asking.
    pub client: &'a Client,
    /// Where the answer goes: its host or app scheme, and what kind it is.
    pub redirect_shown: String,
    /// The kind of place the answer goes to.
    pub destination: Destination,
    /// The scopes asked for.
    pub scopes: &'a [String],
    /// The MCP server the token is for.
    pub resource: &'a str,
    /// The sealed request the form posts back.
    pub sealed_request: &'a str,
    /// Where the form posts.
    pub action: &'a str,
    /// For how many days an approval may be remembered in this browser;
    /// `None` where it may not be (a registered client).
    pub remember_days: Option<u64>,
    /// The page that forgets remembered approvals.
    pub forget: &'a str,
}

/// The consent page: the client, where the answer goes, the scopes, and
/// this server, with Approve and Deny.
pub fn consent(consent: &Consent<'_>) -> http::Response<bytes::Bytes> {
    let client = match (&consent.client.verified_host, &consent.client.name) {
        (Some(host), Some(name)) => format!("{} <small>(published by {})</small>", escape(name), escape(host)),
        (Some(host), None) => escape(host),
        (None, Some(name)) => format!("<span class=\"unverified\">{} (unverified: it named itself)</span>", escape(name)),
        (None, None) => "<span class=\"unverified\">an unnamed, unverified client</span>".to_owned(),
    };
    let warning = match consent.destination {
        Destination::Loopback => {
            "<p class=\"warn\">The answer goes to a program on <b>this computer</b>. Any program can name itself after \
another: approve only if you started this sign-in from an app here just now.</p>"
        }
        Destination::App => {
            "<p class=\"warn\">The answer goes to an <b>app on this device</b>, by its own link scheme. Approve only \
if you started this sign-in from that app just now.</p>"
        }
        Destination::Web => "",
    };
    let scopes = consent.scopes.iter().map(|scope| escape(scope)).collect::<Vec<_>>().join(", ");
    let remember = match consent.remember_days {
        Some(days) => format!(
            "<p><label><input type=\"checkbox\" name=\"remember\" value=\"yes\" checked> Do not ask again in this browser for \
{days} days (this client, this address, this access)</label></p>"
        ),
        None => "<p><small>Approvals of unverified clients are not remembered: this page shows each time.</small></p>".to_owned(),
    };
    let body = format!(
        "<h1>Allow access to this MCP server?</h1>\
<dl><dt>Client</dt><dd>{client}</dd><dt>Answer goes to</dt><dd>{}</dd><dt>Access</dt><dd>{scopes}</dd>\
<dt>MCP server</dt><dd>{}</dd></dl>{warning}\
<form method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"request\" value=\"{}\">{remember}\
<button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
<button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>\
<p><small>You will then sign in, if you have not already. <a href=\"{}\">Forget the approvals this browser \
remembers</a>.</small></p>",
        escape(&consent.redirect_shown),
        escape(consent.resource),
        escape(consent.action),
        escape(consent.sealed_request),
        escape(consent.forget),
    );
    responses::page(StatusCode::OK, document("Allow access?", &body))
}

/// The form that forgets this browser's remembered approvals: it posts
/// to `action` with `proof`, sealed to the browser.
pub fn forget(action: &str, proof: &str) -> http::Response<bytes::Bytes> {
    let body = format!(
        "<h1>Forget remembered approvals?</h1><p>Apps you approved in this browser will ask for your approval again.</p>\
<form method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"proof\" value=\"{}\">\
<button type=\"submit\">Forget</button></form>",
        escape(action),
        escape(proof),
    );
    responses::page(StatusCode::OK, document("Forget approvals?", &body))
}

/// A page that says `what` under `heading`.
pub fn notice(heading: &str, what: &str) -> http::Response<bytes::Bytes> {
    let body = format!("<h1>{}</h1><p>{}</p>", escape(heading), escape(what));
    responses::page(StatusCode::OK, document(heading, &body))
}

/// The page a request gets when its client or redirect URI cannot be
/// trusted with an answer: nothing is redirected anywhere.
pub fn error(status: StatusCode, what: &str) -> http::Response<bytes::Bytes> {
    let body = format!("<h1>This sign-in cannot go on</h1><p>{}</p><p>Close this page and try again from your app.</p>", escape(what));
    responses::page(status, document("Sign-in stopped", &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_client_names_itself_is_text_never_markup() {
        assert_eq!(escape("<script>\"x\"&'y'"), "&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;");
    }
}
