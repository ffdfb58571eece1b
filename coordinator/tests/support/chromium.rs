//! Headless Chromium for the web pages' tests (`web.rs`, `submissions.rs`): Debian's
//! `chromium`, named by `FARM_TEST_CHROMIUM`; pages found by their `data-testid` hooks
//! (`coordinator/web/README.md`); every console error and uncaught exception recorded.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use farm_testkit::required;
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::{Emulation, Log, Page, Runtime};
use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long a page may take to load and draw, or a change to show.
pub const DEADLINE: Duration = Duration::from_secs(30);
/// Between two looks at a condition that does not hold yet.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Screenshots of long pages are cut here (CSS pixels).
pub const MAX_SCREENSHOT_HEIGHT: f64 = 4000.0;

/// A screen the pages are shown on.
#[derive(Debug, Clone, Copy)]
pub struct Screen {
    pub name: &'static str,
    pub width: u32,
    pub height: u32,
    pub pixel_ratio: f64,
    pub mobile: bool,
}

pub const LAPTOP: Screen = Screen { name: "desktop", width: 1280, height: 800, pixel_ratio: 1.0, mobile: false };
pub const PHONE: Screen = Screen { name: "phone", width: 390, height: 844, pixel_ratio: 2.0, mobile: true };

/// Where screenshots go: `target/web-screenshots/{screen}/{label}.png`, emptied first.
pub struct Screenshots {
    pub root: PathBuf,
}

impl Screenshots {
    pub fn new() -> Self {
        // The test runs as target/<profile>/deps/web-<hash>.
        let exe = std::env::current_exe().expect("the test's own path");
        let target = exe.ancestors().nth(3).expect("target/<profile>/deps");
        let root = target.join("web-screenshots");
        match std::fs::remove_dir_all(&root) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => panic!("empty {}: {error}", root.display()),
            _ => {}
        }
        for screen in [LAPTOP, PHONE] {
            std::fs::create_dir_all(root.join(screen.name)).expect("make the screenshot directory");
        }
        Screenshots { root }
    }

    pub fn path(&self, screen: Screen, label: &str) -> PathBuf {
        self.root.join(screen.name).join(format!("{label}.png"))
    }
}

/// Every check that failed, with the page it was made on.
#[derive(Default)]
pub struct Findings(pub Vec<String>);

impl Findings {
    pub fn check(&mut self, page: &str, what: &str, result: Result<(), String>) {
        if let Err(problem) = result {
            self.0.push(format!("{page}: {what}: {problem}"));
        }
    }
}

/// Headless Chromium with one tab. Records every console error, uncaught exception
/// and error log entry of every page it shows, with the page.
pub struct Chromium {
    _browser: Browser,
    tab: Arc<Tab>,
    problems: Arc<Mutex<Vec<String>>>,
    /// The page being shown, for `problems`.
    page: Arc<Mutex<String>>,
}

impl Chromium {
    pub fn launch() -> Self {
        let path = PathBuf::from(required("FARM_TEST_CHROMIUM"));
        let options = LaunchOptions::default_builder()
            .path(Some(path.clone()))
            // The crate's own `headless` passes the old `--headless`; this is the full
            // browser without a window.
            .headless(false)
            .args(vec![OsStr::new("--headless=new")])
            // As root in a container there is no sandbox to be had.
            .sandbox(false)
            // The crate drops its connection after this long without an event.
            .idle_browser_timeout(Duration::from_secs(600))
            .build()
            .expect("launch options");
        let browser =
            Browser::new(options).unwrap_or_else(|error| panic!("Chromium ({}) starts: {error}", path.display()));
        let tab = browser.new_tab().expect("a tab");
        tab.set_default_timeout(DEADLINE);
        let problems = Arc::new(Mutex::new(Vec::new()));
        let page = Arc::new(Mutex::new(String::from("about:blank")));
        let (recorded, current) = (Arc::clone(&problems), Arc::clone(&page));
        tab.add_event_listener(Arc::new(move |event: &Event| {
            if let Some(problem) = describe_problem(event) {
                let page = current.lock().expect("page lock").clone();
                recorded.lock().expect("problems lock").push(format!("{page}: {problem}"));
            }
        }))
        .expect("listen to the tab");
        tab.enable_runtime().expect("Runtime.enable");
        tab.enable_log().expect("Log.enable");
        Chromium { _browser: browser, tab, problems, page }
    }

    pub fn problems(&self) -> Vec<String> {
        self.problems.lock().expect("problems lock").clone()
    }

    pub fn use_screen(&self, screen: Screen) {
        self.tab
            .call_method(Emulation::SetDeviceMetricsOverride {
                width: screen.width,
                height: screen.height,
                device_scale_factor: screen.pixel_ratio,
                mobile: screen.mobile,
                scale: None,
                screen_width: None,
                screen_height: None,
                position_x: None,
                position_y: None,
                dont_set_visible_size: None,
                screen_orientation: None,
                viewport: None,
                display_feature: None,
                device_posture: None,
            })
            .expect("Emulation.setDeviceMetricsOverride");
    }

    /// Shows `url` and waits until its body says `data-ready="true"`; fails at once
    /// when the page shows an error instead.
    pub fn open(&self, url: &str) -> Result<(), String> {
        url.clone_into(&mut self.page.lock().expect("page lock"));
        // A mark on the page being left, so that its readiness is not taken for the
        // new page's.
        self.evaluate("window.farmTestLeaving = true")?;
        self.tab.navigate_to(url).and_then(|tab| tab.wait_until_navigated()).map_err(|error| error.to_string())?;
        let state = self.poll(
            "body[data-ready=\"true\"]",
            r#"(() => {
                if (window.farmTestLeaving) return "loading";
                const error = document.querySelector('[data-testid="error"]');
                if (error && error.textContent.trim() && error.getClientRects().length)
                    return "error: " + error.textContent.trim();
                return document.body && document.body.dataset.ready === "true" ? "ready" : "loading";
            })()"#,
            |state| state != "loading",
        )?;
        if state == "ready" { Ok(()) } else { Err(format!("the page shows {state}")) }
    }

    /// The value of `expression` (promises awaited), or what it threw.
    pub fn evaluate(&self, expression: &str) -> Result<Value, String> {
        let answer = self
            .tab
            .call_method(Runtime::Evaluate {
                expression: expression.to_owned(),
                object_group: None,
                include_command_line_api: None,
                silent: None,
                context_id: None,
                return_by_value: Some(true),
                generate_preview: None,
                user_gesture: Some(true),
                await_promise: Some(true),
                throw_on_side_effect: None,
                timeout: None,
                disable_breaks: None,
                repl_mode: None,
                allow_unsafe_eval_blocked_by_csp: None,
                unique_context_id: None,
                serialization_options: None,
            })
            .map_err(|error| format!("evaluate {expression}: {error}"))?;
        if let Some(thrown) = answer.exception_details {
            let description = thrown.exception.and_then(|exception| exception.description).unwrap_or(thrown.text);
            return Err(format!("{expression} threw {description}"));
        }
        Ok(answer.result.value.unwrap_or(Value::Null))
    }

    /// Evaluates `expression` until `done` accepts its value, for at most [`DEADLINE`].
    pub fn poll(&self, what: &str, expression: &str, done: impl Fn(&Value) -> bool) -> Result<Value, String> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let value = self.evaluate(expression);
            match value {
                Ok(value) if done(&value) => return Ok(value),
                _ if Instant::now() >= deadline => {
                    return Err(format!("{what}: not within {DEADLINE:?} (last seen: {value:?})"));
                }
                _ => std::thread::sleep(POLL_INTERVAL),
            }
        }
    }

    /// Clicks the element with `data-testid` `hook` as a user would (it must be
    /// visible and on top).
    pub fn click(&self, hook: &str) -> Result<(), String> {
        let element = self.tab.find_element(&testid(hook)).map_err(|error| format!("no {hook}: {error}"))?;
        element.click().map(|_| ()).map_err(|error| format!("click {hook}: {error}"))
    }

    /// The `data-testid` hooks of `hooks` missing from the page.
    pub fn missing_hooks(&self, hooks: &[&str]) -> Result<(), String> {
        let list = serde_json::to_string(hooks).expect("JSON");
        let missing =
            self.evaluate(&format!("{list}.filter(hook => !document.querySelector(`[data-testid=\"${{hook}}\"]`))"))?;
        if missing.as_array().is_some_and(Vec::is_empty) { Ok(()) } else { Err(format!("missing {missing}")) }
    }

    /// Whether some link of the page leads to `path`.
    pub fn links_to(&self, path: &str) -> Result<(), String> {
        let found =
            self.evaluate(&format!("[...document.links].some(a => new URL(a.href).pathname === {})", js(path)))?;
        if found == true { Ok(()) } else { Err(format!("no link to {path}")) }
    }

    /// Whether some link of the page leads to a bot's log.
    pub fn links_to_logs(&self) -> Result<(), String> {
        let found = self.evaluate(
            r"[...document.links].some(a => /^\/api\/matches\/[^/]+\/logs\/\d+$/.test(new URL(a.href).pathname))",
        )?;
        if found == true { Ok(()) } else { Err("no link to /api/matches/{job}/logs/{seat}".to_owned()) }
    }

    pub fn shows_text(&self, text: &str) -> Result<(), String> {
        let found = self.evaluate(&format!("document.body.innerText.includes({})", js(text)))?;
        if found == true { Ok(()) } else { Err(format!("{text:?} is not on the page")) }
    }

    /// No text of the page is a JavaScript value that missed its formatting (`null`,
    /// `undefined`, `NaN`, `[object Object]`). Bots' replies and events are left out:
    /// they are the bots' own text.
    pub fn shows_no_unformatted_values(&self) -> Result<(), String> {
        let found = self.evaluate(
            r#"(() => {
                const skipped = '[data-testid="replies"], [data-testid="events"], script, style';
                const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
                const found = [];
                for (let text = texts.nextNode(); text; text = texts.nextNode()) {
                    if (text.parentElement.closest(skipped)) continue;
                    if (/null|\bundefined\b|\bNaN\b|\[object Object\]/.test(text.textContent))
                        found.push(`${text.parentElement.tagName.toLowerCase()}: ${JSON.stringify(text.textContent.trim().slice(0, 80))}`);
                }
                return found.slice(0, 5);
            })()"#,
        )?;
        if found.as_array().is_some_and(Vec::is_empty) { Ok(()) } else { Err(format!("shown: {found}")) }
    }

    /// No element sticks out of the screen sideways (the page does not scroll sideways).
    pub fn fits_the_screen(&self) -> Result<(), String> {
        let overflow = self.evaluate(
            r#"(() => {
                const width = window.innerWidth;
                if (document.documentElement.scrollWidth <= width) return null;
                const name = element => element.tagName.toLowerCase()
                    + (element.dataset.testid ? `[data-testid=${element.dataset.testid}]` : "")
                    + (element.className && typeof element.className === "string" ? "." + element.className.trim().split(/\s+/).join(".") : "");
                const wide = [...document.body.querySelectorAll("*")]
                    .filter(element => element.getBoundingClientRect().right > width + 1)
                    .slice(0, 5)
                    .map(element => `${name(element)} (right edge ${Math.round(element.getBoundingClientRect().right)})`);
                return `the page is ${document.documentElement.scrollWidth} px wide on a ${width} px screen: ${wide.join(", ")}`;
            })()"#,
        )?;
        match overflow {
            Value::Null => Ok(()),
            overflow => Err(overflow.as_str().map_or_else(|| overflow.to_string(), str::to_owned)),
        }
    }

    /// A PNG of the whole page (cut at [`MAX_SCREENSHOT_HEIGHT`]) at `file`.
    pub fn screenshot(&self, file: &Path) -> Result<(), String> {
        let metrics = self.tab.call_method(Page::GetLayoutMetrics(None)).map_err(|error| error.to_string())?;
        let content = metrics.css_content_size;
        let clip = Page::Viewport {
            x: 0.0,
            y: 0.0,
            width: content.width,
            height: content.height.min(MAX_SCREENSHOT_HEIGHT),
            scale: 1.0,
        };
        let shot = self
            .tab
            .call_method(Page::CaptureScreenshot {
                format: Some(Page::CaptureScreenshotFormatOption::Png),
                quality: None,
                clip: Some(clip),
                from_surface: Some(true),
                capture_beyond_viewport: Some(true),
                optimize_for_speed: None,
            })
            .map_err(|error| error.to_string())?;
        let png = base64::engine::general_purpose::STANDARD.decode(shot.data).map_err(|error| error.to_string())?;
        std::fs::write(file, png).map_err(|error| format!("write {}: {error}", file.display()))
    }

    /// A digest of what the replay canvas shows, or an error when it is missing or blank.
    pub fn canvas_digest(&self) -> Result<String, String> {
        let drawn = self.evaluate(
            r#"(() => {
                const canvas = document.querySelector('[data-testid="replay-canvas"]');
                if (!canvas) return { error: "no replay-canvas" };
                if (!canvas.width || !canvas.height) return { error: `the canvas is ${canvas.width}x${canvas.height}` };
                const blank = document.createElement("canvas");
                blank.width = canvas.width;
                blank.height = canvas.height;
                const pixels = canvas.toDataURL();
                return pixels === blank.toDataURL() ? { error: "the canvas is blank" } : { pixels };
            })()"#,
        )?;
        match drawn["pixels"].as_str() {
            Some(pixels) => Ok(format!("{:x}", Sha256::digest(pixels.as_bytes()))),
            None => Err(drawn["error"].as_str().unwrap_or("no answer").to_owned()),
        }
    }

    /// Waits until the canvas shows something other than `before`; returns its digest.
    pub fn canvas_changes_from(&self, before: &str, what: &str) -> Result<String, String> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let now = self.canvas_digest()?;
            if now != before {
                return Ok(now);
            }
            if Instant::now() >= deadline {
                return Err(format!("{what}: the canvas still shows the same pixels after {DEADLINE:?}"));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// The replay frame the `turn` hook shows (its `data-frame`).
    pub fn frame(&self) -> Result<u64, String> {
        let frame = self.evaluate(r#"document.querySelector('[data-testid="turn"]')?.dataset.frame ?? null"#)?;
        frame.as_str().and_then(|frame| frame.parse().ok()).ok_or_else(|| format!("turn has data-frame {frame}"))
    }

    /// Waits until the `turn` hook's `data-frame` satisfies `wanted`.
    pub fn wait_for_frame(&self, what: &str, wanted: impl Fn(u64) -> bool) -> Result<u64, String> {
        let frame =
            self.poll(what, r#"document.querySelector('[data-testid="turn"]')?.dataset.frame ?? null"#, |frame| {
                frame.as_str().and_then(|frame| frame.parse().ok()).is_some_and(&wanted)
            })?;
        Ok(frame.as_str().and_then(|frame| frame.parse().ok()).expect("checked by the poll"))
    }

    /// Chooses `file` in the file input with `data-testid` `hook`, as a user picking it.
    pub fn set_file(&self, hook: &str, file: &Path) -> Result<(), String> {
        let element = self.tab.find_element(&testid(hook)).map_err(|error| format!("no {hook}: {error}"))?;
        let path = file.to_str().ok_or("a UTF-8 path")?;
        element.set_input_files(&[path]).map(|_| ()).map_err(|error| format!("choose {path} in {hook}: {error}"))
    }

    /// Sets the `<select>` or `<input>` found by `selector` to `value` as a user would:
    /// with `input` and `change` events.
    pub fn set_value(&self, selector: &str, value: &str) -> Result<(), String> {
        let set = self.evaluate(&format!(
            r#"(() => {{
                const control = document.querySelector({});
                if (!control) return false;
                control.value = {};
                control.dispatchEvent(new Event("input", {{ bubbles: true }}));
                control.dispatchEvent(new Event("change", {{ bubbles: true }}));
                return true;
            }})()"#,
            js(selector),
            js(value)
        ))?;
        if set == true { Ok(()) } else { Err(format!("no {selector}")) }
    }
}

/// A page problem the test fails on: console errors and failed assertions, uncaught
/// exceptions, and error log entries (failed loads, for one).
pub fn describe_problem(event: &Event) -> Option<String> {
    match event {
        Event::RuntimeConsoleAPICalled(call) => {
            use Runtime::ConsoleAPICalledEventTypeOption as Kind;
            let kind = match call.params.Type {
                Kind::Error => "console.error",
                Kind::Assert => "console.assert",
                _ => return None,
            };
            let text: Vec<String> = call
                .params
                .args
                .iter()
                .map(|arg| match &arg.value {
                    Some(Value::String(text)) => text.clone(),
                    Some(value) => value.to_string(),
                    None => arg.description.clone().unwrap_or_default(),
                })
                .collect();
            Some(format!("{kind}: {}", text.join(" ")))
        }
        Event::RuntimeExceptionThrown(thrown) => {
            let details = &thrown.params.exception_details;
            let description =
                details.exception.as_ref().and_then(|exception| exception.description.clone()).unwrap_or_default();
            let place = format!("{}:{}", details.url.clone().unwrap_or_default(), details.line_number + 1);
            Some(format!("uncaught exception: {} {description} at {place}", details.text))
        }
        Event::LogEntryAdded(added) if added.params.entry.level == Log::LogEntryLevel::Error => {
            let entry = &added.params.entry;
            Some(format!("{:?} error: {} {}", entry.source, entry.text, entry.url.clone().unwrap_or_default()))
        }
        _ => None,
    }
}

pub fn testid(hook: &str) -> String {
    format!("[data-testid=\"{hook}\"]")
}

/// `text` as a JavaScript string literal.
pub fn js(text: &str) -> String {
    Value::from(text).to_string()
}
