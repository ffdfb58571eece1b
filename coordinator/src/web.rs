//! The web pages (`coordinator/web/`, see its README): every file there is embedded in
//! the binary (`build.rs` lists them) and served under `/static/`, and each page path
//! answers with its page's HTML, which draws itself from the JSON API with `fetch`.
//!
//! Every file is sent with an ETag (a hash of its bytes, computed once) and
//! `Cache-Control: no-cache`: browsers ask again each time and get a 304 while the
//! bytes are the same, so a new binary's pages are picked up at once.

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

use crate::api_error::ApiError;

/// Every embedded file as (its path under `web/`, its bytes).
static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));

/// The page paths (the README's table) and the file each answers with.
pub const PAGES: [(&str, &str); 8] = [
    ("/", "index.html"),
    ("/bots", "bots.html"),
    ("/bots/{name}", "versions.html"),
    ("/bots/{a}/versus/{b}", "versus.html"),
    ("/tournaments/{id}", "tournament.html"),
    ("/tournaments/{id}/bots/{bot}", "bot.html"),
    ("/tournaments/{id}/matches", "matches.html"),
    ("/matches/{job_id}", "match.html"),
];

/// What the pages may load: their own scripts, styles and the API, nothing from
/// elsewhere; no inline scripts (so no inline event handlers either).
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; \
     object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Sent for a file whose extension has no entry in [`content_type`].
const UNKNOWN_TYPE: &str = "application/octet-stream";

/// An embedded file, ready to serve.
struct Asset {
    bytes: &'static [u8],
    content_type: &'static str,
    etag: HeaderValue,
}

static ASSETS: LazyLock<HashMap<&'static str, Asset>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|&(name, bytes)| {
            let digest = Sha256::digest(bytes);
            let hex = hex::encode(&digest[..16]);
            let etag = HeaderValue::from_str(&format!("\"{hex}\"")).expect("hex digits are a valid header value");
            (name, Asset { bytes, content_type: content_type(name), etag })
        })
        .collect()
});

/// The `Content-Type` of a file, by its extension.
fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, extension)| extension) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        _ => UNKNOWN_TYPE,
    }
}

/// The page and `/static/` routes, which the API's router merges.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new();
    for (path, file) in PAGES {
        router = router.route(path, get(move |headers: HeaderMap| async move { serve(file, &headers) }));
    }
    router.route(
        "/static/{*file}",
        get(|Path(file): Path<String>, headers: HeaderMap| async move { serve(&file, &headers) }),
    )
}

/// The file `name`: whole, or a 304 when the browser's copy (`If-None-Match`) is current.
fn serve(name: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = ASSETS.get(name) else {
        return ApiError::NotFound(format!("no file {name} in the web pages")).into_response();
    };
    let current = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        // A weak validator matches on its tag (RFC 9110, 13.1.2).
        .any(|tag| tag == "*" || tag.trim_start_matches("W/").as_bytes() == asset.etag.as_bytes());
    let cache = [
        (header::ETAG, asset.etag.clone()),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY)),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ];
    if current {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (cache, [(header::CONTENT_TYPE, asset.content_type)], asset.bytes).into_response()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    async fn get(uri: &str, if_none_match: Option<&str>) -> (StatusCode, HeaderMap, Vec<u8>) {
        let mut request = Request::get(uri);
        if let Some(tag) = if_none_match {
            request = request.header(header::IF_NONE_MATCH, tag);
        }
        let response = routes::<()>()
            .oneshot(request.body(Body::empty()).expect("request"))
            .await
            .expect("the router never fails");
        let (parts, body) = response.into_parts();
        (parts.status, parts.headers, body.collect().await.expect("body").to_bytes().to_vec())
    }

    fn header_text(headers: &HeaderMap, name: header::HeaderName) -> &str {
        headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or_default()
    }

    /// Every file under `web/` as the build script names it: README and hidden files aside.
    fn files_on_disk(root: &std::path::Path, directory: &std::path::Path, found: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(directory).expect("read web/") {
            let path = entry.expect("entry").path();
            let name = path.file_name().expect("a name").to_string_lossy().into_owned();
            if name.starts_with('.') || name == "README.md" {
                continue;
            }
            if path.is_dir() {
                files_on_disk(root, &path, found);
            } else {
                let relative = path.strip_prefix(root).expect("under web/");
                let parts: Vec<_> = relative.components().map(|part| part.as_os_str().to_string_lossy()).collect();
                found.insert(parts.join("/"));
            }
        }
    }

    #[test]
    fn every_file_in_the_web_directory_is_embedded_with_a_known_type_and_nothing_else() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
        let mut on_disk = BTreeSet::new();
        files_on_disk(&root, &root, &mut on_disk);
        let embedded: BTreeSet<String> = FILES.iter().map(|(name, _)| (*name).to_owned()).collect();
        assert_eq!(embedded, on_disk);
        for (name, bytes) in FILES {
            let on_disk = std::fs::read(root.join(name)).expect("read the file");
            assert!(on_disk == *bytes, "{name}: the embedded copy is the file");
            assert_ne!(content_type(name), UNKNOWN_TYPE, "{name}: add its extension to content_type");
        }
        for (_, file) in PAGES {
            assert!(ASSETS.contains_key(file), "page {file} is missing from web/");
        }
    }

    #[tokio::test]
    async fn every_page_path_answers_with_its_page() {
        for (path, file) in PAGES {
            let uri =
                path.replace("{id}", "t-0123456789abcdef").replace("{bot}", "some%20bot").replace("{job_id}", "j-1");
            let (status, headers, body) = get(&uri, None).await;
            assert_eq!(status, StatusCode::OK, "{uri}");
            assert_eq!(header_text(&headers, header::CONTENT_TYPE), "text/html; charset=utf-8", "{uri}");
            assert_eq!(header_text(&headers, header::CACHE_CONTROL), "no-cache", "{uri}");
            assert!(header_text(&headers, header::CONTENT_SECURITY_POLICY).contains("default-src 'self'"));
            assert!(body == ASSETS[file].bytes, "{uri} is {file}");
            let text = String::from_utf8(body).expect("UTF-8");
            assert!(text.starts_with("<!doctype html>"), "{uri}");
            assert!(text.contains("name=\"viewport\""), "{uri}: phones need the viewport meta tag");
        }
    }

    #[tokio::test]
    async fn static_files_have_their_content_types() {
        for (name, file_type) in [
            ("app.css", "text/css; charset=utf-8"),
            ("common.js", "text/javascript; charset=utf-8"),
            ("tournament.js", "text/javascript; charset=utf-8"),
            ("index.html", "text/html; charset=utf-8"),
        ] {
            let (status, headers, body) = get(&format!("/static/{name}"), None).await;
            assert_eq!(status, StatusCode::OK, "{name}");
            assert_eq!(header_text(&headers, header::CONTENT_TYPE), file_type, "{name}");
            assert_eq!(header_text(&headers, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
            assert!(body == ASSETS[name].bytes, "{name}");
        }
        assert_eq!(content_type("games/maze.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("logo.svg"), "image/svg+xml");
        assert_eq!(content_type("notes"), UNKNOWN_TYPE);
    }

    #[tokio::test]
    async fn a_current_etag_gets_a_304_and_a_stale_one_the_file() {
        let (status, headers, body) = get("/static/app.css", None).await;
        assert_eq!(status, StatusCode::OK);
        let etag = header_text(&headers, header::ETAG).to_owned();
        assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34, "{etag}");
        assert!(!body.is_empty());

        for current in [etag.clone(), format!("W/{etag}"), format!("\"other\", {etag}"), "*".to_owned()] {
            let (status, headers, body) = get("/static/app.css", Some(&current)).await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "If-None-Match: {current}");
            assert_eq!(header_text(&headers, header::ETAG), etag);
            assert_eq!(header_text(&headers, header::CACHE_CONTROL), "no-cache");
            assert!(body.is_empty());
        }
        let (status, _, body) = get("/static/app.css", Some("\"0123\"")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body == ASSETS["app.css"].bytes);

        let (_, page_headers, _) = get("/", None).await;
        let page_etag = header_text(&page_headers, header::ETAG).to_owned();
        assert_ne!(page_etag, etag, "each file has its own tag");
        assert_eq!(get("/tournaments/t-1", Some(&page_etag)).await.0, StatusCode::OK, "another page, another tag");
        assert_eq!(get("/static/index.html", Some(&page_etag)).await.0, StatusCode::NOT_MODIFIED);
    }

    #[tokio::test]
    async fn unknown_files_and_the_readme_are_404() {
        for uri in ["/static/nothing.js", "/static/README.md", "/static/games/none.js", "/static/../Cargo.toml"] {
            let (status, headers, body) = get(uri, None).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
            assert_eq!(header_text(&headers, header::CONTENT_TYPE), "application/json", "{uri}");
            assert!(String::from_utf8_lossy(&body).contains("not_found"), "{uri}");
        }
        assert_eq!(get("/static/", None).await.0, StatusCode::NOT_FOUND);
    }

    /// The replays the viewer's node tests read (`tests/js/replays`, one per game) are
    /// the engine's own: each re-simulates byte for byte in the current format. When a
    /// game's state document changes, this fails; play each match again from its
    /// header's setup with its frames' replies to make it anew.
    #[test]
    fn the_viewer_tests_replays_are_the_engines() {
        use farm_engine::replay;

        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/replays");
        let mut games = BTreeSet::new();
        for entry in std::fs::read_dir(&dir).expect("read tests/js/replays") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("a replay is UTF-8");
            let lines: Vec<&str> = text.lines().collect();
            let header: serde_json::Value = serde_json::from_str(lines[0]).expect("a JSON header");
            assert_eq!(header["format"], replay::FORMAT_VERSION, "{}", path.display());
            let check = replay::verify(&lines).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            assert!(check.matches(), "{}: line {:?} is not the engine's", path.display(), check.first_difference);
            let game = header["setup"]["game"].as_str().expect("a game").to_owned();
            assert_eq!(path.file_name().and_then(|name| name.to_str()), Some(&*format!("{game}.jsonl")));
            games.insert(game);
        }
        let every: BTreeSet<String> = farm_engine::GameKind::ALL.iter().map(|kind| kind.name().to_owned()).collect();
        assert_eq!(games, every, "one replay per game");
    }
}
