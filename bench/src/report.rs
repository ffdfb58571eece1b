//! The report: one JSON document with every section's figures, and the table printed
//! from the same rows.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value, json};

/// A section's figures: JSON for the report, and the rows of the table.
#[derive(Default)]
pub struct Figures {
    json: Map<String, Value>,
    rows: Vec<Row>,
}

/// One line of the table.
struct Row {
    name: String,
    value: String,
}

impl Figures {
    /// Records `value` under `path` (keys separated by `.`), shown as `shown`.
    pub fn put(&mut self, path: &str, value: impl Serialize, shown: String) {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        let mut keys: Vec<&str> = path.split('.').collect();
        let last = keys.pop().unwrap_or(path);
        let mut object = &mut self.json;
        for key in keys {
            let entry = object.entry(key).or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            object = entry.as_object_mut().unwrap_or_else(|| unreachable!("made an object just above"));
        }
        object.insert(last.to_owned(), value);
        self.rows.push(Row { name: path.to_owned(), value: shown });
    }

    /// Records a number with its unit.
    pub fn number(&mut self, path: &str, value: f64, unit: &str) {
        self.put(path, value, format!("{} {unit}", significant(value)));
    }

    /// Records a ratio where one figure is the other's baseline.
    pub fn ratio(&mut self, path: &str, value: f64) {
        self.put(path, value, format!("{}x", significant(value)));
    }

    /// Records that part of a section could not run, and why.
    pub fn skipped(&mut self, path: &str, why: &str) {
        self.put(&format!("{path}.skipped"), why, format!("skipped: {why}"));
    }

    /// Records a latency distribution (microseconds) under `path`.
    pub fn latencies(&mut self, path: &str, samples: &mut [Duration]) {
        samples.sort_unstable();
        let micros = |duration: Duration| duration.as_secs_f64() * 1e6;
        let quantile = |q: f64| micros(samples[((samples.len() - 1) as f64 * q).round() as usize]);
        let mean = samples.iter().map(|d| micros(*d)).sum::<f64>() / samples.len() as f64;
        self.put(&format!("{path}.samples"), samples.len(), samples.len().to_string());
        self.number(&format!("{path}.p50_us"), quantile(0.5), "µs");
        self.number(&format!("{path}.p99_us"), quantile(0.99), "µs");
        self.number(&format!("{path}.mean_us"), mean, "µs");
    }

    /// The number recorded at `path`, if any.
    pub fn get(&self, path: &str) -> Option<f64> {
        let mut keys = path.split('.');
        let first = self.json.get(keys.next()?)?;
        keys.try_fold(first, |value, key| value.get(key))?.as_f64()
    }
}

/// Three significant digits, without exponent notation for everyday sizes.
fn significant(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let digits = value.abs().log10().floor() as i32;
    let decimals = (2 - digits).max(0) as usize;
    format!("{value:.decimals$}")
}

/// What became of one section.
pub enum Outcome {
    /// It ran.
    Ran(Figures),
    /// It could not run at all.
    Skipped(String),
}

/// The whole report.
pub struct Report {
    pub header: Value,
    pub sections: Vec<(&'static str, Outcome)>,
}

impl Report {
    /// The JSON document.
    pub fn to_json(&self) -> Value {
        let mut sections = Map::new();
        for (name, outcome) in &self.sections {
            let value = match outcome {
                Outcome::Ran(figures) => Value::Object(figures.json.clone()),
                Outcome::Skipped(why) => json!({ "skipped": why }),
            };
            sections.insert((*name).to_owned(), value);
        }
        let mut document = self.header.clone();
        document["sections"] = Value::Object(sections);
        document
    }

    /// The table: one line per figure, grouped by section.
    pub fn table(&self) -> String {
        let mut lines = Vec::new();
        let width = self
            .sections
            .iter()
            .filter_map(|(_, outcome)| match outcome {
                Outcome::Ran(figures) => figures.rows.iter().map(|row| row.name.len()).max(),
                Outcome::Skipped(_) => None,
            })
            .max()
            .unwrap_or(0);
        for (name, outcome) in &self.sections {
            lines.push(format!("[{name}]"));
            match outcome {
                Outcome::Ran(figures) => {
                    for row in &figures.rows {
                        lines.push(format!("  {:width$}  {}", row.name, row.value));
                    }
                }
                Outcome::Skipped(why) => lines.push(format!("  skipped: {why}")),
            }
        }
        lines.join("\n") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_paths_build_nested_objects_and_rows() {
        let mut figures = Figures::default();
        figures.number("a.b", 1234.4, "ms");
        figures.ratio("a.c", 0.5);
        figures.skipped("d", "no Docker");
        assert_eq!(figures.get("a.b"), Some(1234.4));
        let report = Report { header: json!({}), sections: vec![("s", Outcome::Ran(figures))] };
        let json = report.to_json();
        assert_eq!(json["sections"]["s"]["a"]["c"], 0.5);
        assert_eq!(json["sections"]["s"]["d"]["skipped"], "no Docker");
        let table = report.table();
        assert!(
            table.lines().any(|line| line.trim_start().starts_with("a.b") && line.ends_with(" 1234 ms")),
            "{table}"
        );
        assert!(table.contains("skipped: no Docker"), "{table}");
    }

    #[test]
    fn latencies_give_quantiles_in_microseconds() {
        let mut figures = Figures::default();
        let mut samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        figures.latencies("rt", &mut samples);
        assert_eq!(figures.get("rt.p50_us"), Some(51.0));
        assert_eq!(figures.get("rt.p99_us"), Some(99.0));
        assert_eq!(figures.get("rt.samples"), Some(100.0));
    }
}
