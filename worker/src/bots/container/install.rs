//! The container supervisor's installation: the static `farm-supervisor` copied into
//! the run root, where the Docker engine bind-mounts it into every bot container.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Where the supervisor binary is looked for in a build tree, from an ancestor of the
/// running binary (scripts/build-supervisor puts it there).
const BUILT_SUPERVISOR: &str = "static/x86_64-unknown-linux-gnu/release/farm-supervisor";

/// The supervisor's file name in the run root.
pub(super) const SUPERVISOR_FILE: &str = "farm-supervisor";

/// Copies the static supervisor into `run_root` (made if need be), where the Docker
/// engine can bind-mount it; says which binary is missing or unfit, and how to build it.
pub(super) fn install_supervisor(configured: Option<&Path>, run_root: &Path) -> Result<(), String> {
    let binary = match configured {
        Some(path) => {
            let binary = std::fs::read(path)
                .map_err(|error| format!("cannot read the supervisor {}: {error}", path.display()))?;
            if !is_static_elf(&binary) {
                return Err(format!(
                    "{} is not a static executable; the supervisor runs inside bot images of every kind: build it \
                     with scripts/build-supervisor",
                    path.display()
                ));
            }
            binary
        }
        None => find_supervisor()?,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o711)
        .create(run_root)
        .map_err(|error| format!("cannot make the run directory {}: {error}", run_root.display()))?;
    // A new file, renamed over the old: a container of an earlier run may still have
    // the old one mounted.
    let target = run_root.join(SUPERVISOR_FILE);
    let partial = run_root.join(format!(".{SUPERVISOR_FILE}.{}", std::process::id()));
    std::fs::write(&partial, &binary)
        .and_then(|()| std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755)))
        .and_then(|()| std::fs::rename(&partial, &target))
        .map_err(|error| format!("cannot install the supervisor in {}: {error}", run_root.display()))
}

/// The first static `farm-supervisor` beside the running binary or in the build tree
/// of an ancestor directory (`target/static/...`; a workspace build leaves a dynamic
/// one beside the binary, which cannot serve).
fn find_supervisor() -> Result<Vec<u8>, String> {
    let exe = std::env::current_exe().map_err(|error| format!("cannot find the running binary: {error}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = std::iter::once(dir.join(SUPERVISOR_FILE))
        .chain(dir.ancestors().take(4).map(|ancestor| ancestor.join(BUILT_SUPERVISOR)));
    let mut tried = Vec::new();
    for candidate in candidates {
        if let Ok(binary) = std::fs::read(&candidate)
            && is_static_elf(&binary)
        {
            return Ok(binary);
        }
        tried.push(candidate.display().to_string());
    }
    Err(format!(
        "no static container supervisor found (looked for {}): build it with scripts/build-supervisor, or set \
         docker.supervisor (FARM_DOCKER__SUPERVISOR)",
        tried.join(", ")
    ))
}

/// Whether `binary` is an x86-64 ELF executable with no program interpreter (so it
/// needs no dynamic loader and no library from the image).
fn is_static_elf(binary: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    let u16_at = |at: usize| binary.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |at: usize| binary.get(at..at + 4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes);
    let u64_at = |at: usize| binary.get(at..at + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    // 64-bit, little-endian, executable or position-independent.
    if !binary.starts_with(b"\x7fELF\x02\x01") || !matches!(u16_at(16), Some(2 | 3)) {
        return false;
    }
    let (Some(table), Some(entry), Some(entries)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38)) else {
        return false;
    };
    (0..usize::from(entries)).all(|index| {
        usize::try_from(table)
            .ok()
            .and_then(|table| u32_at(table + index * usize::from(entry)))
            .is_some_and(|kind| kind != PT_INTERP)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_elf_without_an_interpreter_counts_as_static() {
        let worker = std::fs::read(std::env::current_exe().expect("this test")).expect("readable");
        assert!(!is_static_elf(&worker), "a dynamically linked test binary");
        assert!(!is_static_elf(b"#!/bin/sh\n"));
        assert!(!is_static_elf(b"\x7fELF\x02\x01"), "truncated");
    }
}
