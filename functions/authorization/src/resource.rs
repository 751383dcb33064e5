//! The resource rule (RFC 8707), in one place: the only resource here is
//! this MCP server, named with or without a trailing slash (clients write
//! both; Gemini CLI keeps the URL as typed).

/// Whether `asked` names `ours`.
pub fn is_ours(asked: &str, ours: &str) -> bool {
    asked.trim_end_matches('/') == ours.trim_end_matches('/')
}

/// Whether a request that may name a resource (`asked`) names `ours` or none.
pub fn admits(asked: Option<&str>, ours: &str) -> bool {
    asked.is_none_or(|asked| is_ours(asked, ours))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_server_with_or_without_its_trailing_slash_and_nothing_else() {
        let ours = "https://mcp.example.com/mcp";
        assert!(admits(None, ours));
        assert!(admits(Some("https://mcp.example.com/mcp/"), ours));
        assert!(is_ours(ours, "https://mcp.example.com/mcp/"));
        for other in
            ["https://mcp.example.com/mcp/x", "https://mcp.example.com", "https://evil.example.com/mcp", "http://mcp.example.com/mcp"]
        {
            assert!(!admits(Some(other), ours), "{other}");
        }
    }
}
