//! Who may call: the names a request may be addressed to (`Host`), the
//! pages that may call from a browser (`Origin`, CORS and its preflight),
//! and the bearer token.

use std::net::{IpAddr, SocketAddr, TcpStream};

use crate::serve::http::{self, Head, Refused};
use crate::serve::input::is_json;
use crate::serve::listen::refuse;
use crate::serve::{Config, Shared, TOKEN_VAR};

/// Whether the request in `head` may go on to its body: the CORS headers
/// of its answers if so; if not, it is answered here (a preflight too) and
/// `None` returned.
pub(super) fn admit(conn: &mut TcpStream, head: &Head, shared: &Shared) -> Option<String> {
    let host = head.header("host").unwrap_or("");
    if host.is_empty() {
        let _ = refuse(conn, "", Refused(400, "no Host header"));
        return None;
    }
    if !shared.access.host(host) {
        let why = "not a name of this server (see serve --allow-host)";
        let _ = refuse(conn, "", Refused(421, why));
        return None;
    }
    let cors = match head.header("origin") {
        None => String::new(),
        Some(origin) if shared.access.origin(origin, host) => cors_for(origin),
        Some(origin) => {
            log_refused_origin(origin);
            let why = "pages from this origin may not call (see serve --allow-origin)";
            let _ = refuse(conn, "", Refused(403, why));
            return None;
        }
    };
    if head.method == "OPTIONS" {
        preflight(conn, head, &cors);
        return None;
    }
    if head.method != "POST" {
        let _ = refuse(conn, &cors, Refused(405, "POST an AG-UI RunAgentInput"));
        return None;
    }
    if !head.header("content-type").is_some_and(is_json) {
        let why = "the body must be Content-Type: application/json";
        let _ = refuse(conn, &cors, Refused(415, why));
        return None;
    }
    if let Some(token) = &shared.token {
        let given = head.header("authorization").and_then(bearer).unwrap_or("");
        if !same_secret(given.as_bytes(), token) {
            // A front end that worked before tokens were the default is
            // told what to send and where the token is.
            let why = "a wrong or missing bearer token: send Authorization: Bearer TOKEN, with the token serve keeps in the file it names at start (or start serve with --token-file, or --no-token on loopback)";
            let _ = refuse(conn, &cors, Refused(401, why));
            return None;
        }
    }
    Some(cors)
}

/// Origins named on stderr, at most: a page sees only "Failed to fetch",
/// so the server says once per origin what it refused, and a flood of
/// origins costs bounded memory.
const MAX_LOGGED_ORIGINS: usize = 64;

/// Says on stderr, once per origin, that a page from `origin` was refused
/// and how to allow it.
fn log_refused_origin(origin: &str) {
    use std::io::Write;
    static LOGGED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut logged = LOGGED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if logged.len() > MAX_LOGGED_ORIGINS || logged.iter().any(|o| o == origin) {
        return;
    }
    let line = if logged.len() == MAX_LOGGED_ORIGINS {
        format!(
            "agui-translate: serve: refused pages from {MAX_LOGGED_ORIGINS} origins; \
             further ones are not named"
        )
    } else {
        // Shown escaped and cut: the header is the client's.
        let shown: String = origin.chars().take(200).collect();
        format!(
            "agui-translate: serve: refused a request from a page at {shown:?} \
             (403): to let it call, start serve with --allow-origin {}",
            shown.escape_debug()
        )
    };
    logged.push(origin.to_owned());
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A browser's preflight, from an allowed page, answered.
fn preflight(conn: &mut TcpStream, head: &Head, cors: &str) {
    let asked = head
        .header("access-control-request-headers")
        .unwrap_or("Content-Type, Authorization");
    if !header_list_ok(asked) {
        let _ = refuse(conn, cors, Refused(400, "a malformed header list"));
        return;
    }
    let headers = format!(
        "{cors}Allow: POST, OPTIONS\r\nAccess-Control-Allow-Methods: POST\r\n\
         Access-Control-Allow-Headers: {asked}\r\nAccess-Control-Max-Age: 600\r\n"
    );
    let _ = http::respond(conn, 204, &headers, "text/plain", b"");
    http::close(conn);
}

/// Who may call: the names a request may be addressed to (`Host`), and the
/// web pages (`Origin`) that may call from a browser.
pub(super) struct Access {
    /// Host names, in lower case, without a port.
    hosts: Vec<String>,
    /// Listening on every address: any address literal names this server.
    any_address: bool,
    origins: Vec<String>,
}

impl Access {
    pub(super) fn new(local: SocketAddr, hosts: &[String], origins: &[String]) -> Self {
        let mut names: Vec<String> = ["localhost", "127.0.0.1", "[::1]"].map(String::from).into();
        names.push(match local.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        });
        names.extend(hosts.iter().map(|h| h.to_ascii_lowercase()));
        Access {
            hosts: names,
            any_address: local.ip().is_unspecified(),
            origins: origins.iter().map(|o| o.to_ascii_lowercase()).collect(),
        }
    }

    /// Whether a `Host` header names this server. A name that is not its
    /// own is how a DNS-rebinding page reaches it.
    pub(super) fn host(&self, host: &str) -> bool {
        let Some(name) = host_name(host) else {
            return false;
        };
        let name = name.to_ascii_lowercase();
        self.hosts.contains(&name)
            || (self.any_address
                && (name.parse::<std::net::Ipv4Addr>().is_ok()
                    || name
                        .strip_prefix('[')
                        .and_then(|n| n.strip_suffix(']'))
                        .is_some_and(|n| n.parse::<std::net::Ipv6Addr>().is_ok())))
    }

    /// Whether a page from `origin` may call: one given with
    /// `--allow-origin`, or the server's own (the `Host` it was sent to).
    pub(super) fn origin(&self, origin: &str, host: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        self.origins.contains(&origin)
            || origin
                .strip_prefix("http://")
                .is_some_and(|o| o == host.to_ascii_lowercase())
    }
}

/// The name in a `Host` value (`name`, `name:port`, `[v6]:port`), or
/// `None` if it is not one.
pub(super) fn host_name(host: &str) -> Option<&str> {
    let (name, port) = if host.starts_with('[') {
        let end = host.find(']')? + 1;
        (&host[..end], &host[end..])
    } else {
        match host.split_once(':') {
            Some((n, p)) => (n, &host[n.len()..][..p.len() + 1]),
            None => (host, ""),
        }
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let name_ok = match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(ip) => ip.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
        }
    };
    (name_ok && port_ok).then_some(name)
}

/// An `--allow-origin` value: `scheme://host[:port]`, as a browser writes
/// an origin (no path, not even `/`).
pub(super) fn origin_ok(o: &str) -> bool {
    let rest = o
        .strip_prefix("http://")
        .or_else(|| o.strip_prefix("https://"));
    rest.and_then(host_name).is_some()
}

/// The token from `--token`, `--token-file` or the environment, if any.
/// A token file that others may read or write is refused, as ssh refuses
/// a loose key: the token lets its holder run the CLI as this user.
pub(super) fn token_of(a: &Config) -> Result<Option<String>, String> {
    let token = if let Some(t) = &a.token {
        t.clone()
    } else if let Some(file) = &a.token_file {
        read_token_file(file).map_err(|e| format!("--token-file {}: {e}", file.display()))?
    } else if let Some(t) = std::env::var_os(TOKEN_VAR) {
        t.into_string()
            .map_err(|_| format!("{TOKEN_VAR} is not UTF-8"))?
    } else {
        return Ok(None);
    };
    token_ok(&token)?;
    Ok(Some(token))
}

/// A token as a header can carry it.
fn token_ok(token: &str) -> Result<(), String> {
    if token.is_empty() {
        return Err("the token is empty".into());
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("the token has a space or a character that is not ASCII".into());
    }
    Ok(())
}

/// The first line of a token file that only its owner may read and write.
fn read_token_file(file: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let mut f = std::fs::File::open(file).map_err(|e| e.to_string())?;
    let mode = f
        .metadata()
        .map_err(|e| e.to_string())?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "others may read or write it (mode {:04o}): the token lets whoever \
             has it run the CLI as this user; make it private with `chmod 600`",
            mode & 0o7777
        ));
    }
    let mut text = String::new();
    f.by_ref()
        .take(MAX_TOKEN_FILE)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    Ok(text.lines().next().unwrap_or("").trim().to_owned())
}

/// The bytes of a token file read, at most: a token is one short line.
const MAX_TOKEN_FILE: u64 = 64 * 1024;

/// The name of the token the server makes, in the state directory.
pub(super) const KEPT_TOKEN: &str = "token";

/// The token the server keeps in `file` (in its state directory, which is
/// its own): the one there if there is one, else a new one (32 random
/// bytes in hex), written 0600. So a front end configured with it still
/// gets in after a restart.
pub(super) fn kept_token(file: &std::path::Path) -> Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let shown = file.display();
    match std::fs::symlink_metadata(file) {
        Ok(meta) => {
            // SAFETY: geteuid cannot fail.
            let me = unsafe { libc::geteuid() };
            if !meta.is_file() || meta.uid() != me {
                return Err(format!(
                    "{shown}: not a regular file of this user; remove it and a new token is made"
                ));
            }
            let token = read_token_file(file).map_err(|e| format!("{shown}: {e}"))?;
            token_ok(&token).map_err(|e| format!("{shown}: {e}"))?;
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut bytes = [0u8; 32];
            crate::base::uuid::fill_random(&mut bytes)
                .map_err(|e| format!("making a token: {e}"))?;
            let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            crate::base::files::write_atomic(file, format!("{token}\n").as_bytes())
                .map_err(|e| format!("{shown}: {e}"))?;
            Ok(token)
        }
        Err(e) => Err(format!("{shown}: {e}")),
    }
}

/// Compares a secret in time that depends only on the length of `given`
/// (what the client sent), neither on where the two differ nor on the
/// length of `secret`.
fn same_secret(given: &[u8], secret: &[u8]) -> bool {
    if secret.is_empty() {
        return false;
    }
    let mut diff = u8::from(given.len() != secret.len());
    for (i, b) in given.iter().enumerate() {
        diff |= b ^ secret[i % secret.len()];
    }
    std::hint::black_box(diff) == 0
}

/// The credentials of an `Authorization: Bearer …` value (the scheme's name
/// in any case).
pub(super) fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim_start_matches(' '))
}

/// Header names as a preflight lists them (`Access-Control-Request-Headers`).
fn header_list_ok(list: &str) -> bool {
    list.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~, ".contains(&b))
}

/// The CORS headers of every answer to a page from `origin`.
fn cors_for(origin: &str) -> String {
    format!("Access-Control-Allow-Origin: {origin}\r\nVary: Origin\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"ab"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"abcabc", b"abc"));
        assert!(!same_secret(b"", b"abc"));
        assert!(!same_secret(b"", b""));
    }

    #[test]
    fn the_bearer_scheme_is_any_case() {
        assert_eq!(bearer("Bearer t"), Some("t"));
        assert_eq!(bearer("bearer t"), Some("t"));
        assert_eq!(bearer("BEARER  t"), Some("t"));
        assert_eq!(bearer("Basic t"), None);
        assert_eq!(bearer("Bearert"), None);
    }

    #[test]
    fn hosts_are_the_server_s_names() {
        let local: SocketAddr = "127.0.0.1:8799".parse().unwrap();
        let a = Access::new(local, &["Proxy.example".into()], &[]);
        for ok in [
            "127.0.0.1:8799",
            "localhost:8799",
            "LOCALHOST",
            "[::1]:8799",
            "proxy.example",
            "proxy.example:443",
        ] {
            assert!(a.host(ok), "{ok}");
        }
        for bad in [
            "evil.example:8799",
            "127.0.0.2:8799",
            "localhost:",
            "localhost:80x",
            "proxy.example.evil",
            "[::1",
            "",
        ] {
            assert!(!a.host(bad), "{bad}");
        }
        let any = Access::new("0.0.0.0:8799".parse().unwrap(), &[], &[]);
        assert!(any.host("192.0.2.7:8799") && any.host("[2001:db8::1]:8799"));
        assert!(!any.host("evil.example:8799"));
    }

    #[test]
    fn origins_are_given_ones_or_the_server_s_own() {
        let local: SocketAddr = "127.0.0.1:8799".parse().unwrap();
        let a = Access::new(local, &[], &["https://App.example".into()]);
        assert!(a.origin("https://app.example", "127.0.0.1:8799"));
        assert!(a.origin("http://127.0.0.1:8799", "127.0.0.1:8799"));
        assert!(!a.origin("http://app.example", "127.0.0.1:8799"));
        assert!(!a.origin("https://app.example:444", "127.0.0.1:8799"));
        assert!(!a.origin("null", "127.0.0.1:8799"));
        assert!(origin_ok("http://localhost:3000") && origin_ok("https://a.example"));
        for bad in [
            "a.example",
            "https://a.example/",
            "null",
            "https://",
            "ftp://a",
        ] {
            assert!(!origin_ok(bad), "{bad}");
        }
    }
}
