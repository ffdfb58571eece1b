//! The bots and sandboxes the sections use: built-in bots, bench-echo-bot as a local
//! process, and its images in Docker.

use std::path::PathBuf;

use farm_proto::{BotLaunch, BotSpec, Transport};
use farm_worker::bots::{DockerSandbox, DockerSettings};

/// The echo bot's stdio image (deploy/build-images.sh builds it).
pub const ECHO_IMAGE: &str = "matchfarm/bot-bench-echo-rs";
/// The echo bot's http image.
pub const ECHO_HTTP_IMAGE: &str = "matchfarm/bot-bench-echo-http-rs";
/// The Rust Vindinium starter kit's image: a client of the original server's API.
pub const KIT_IMAGE: &str = "matchfarm/bot-vindinium-kit-rs";

/// A binary of the workspace beside this one (target/<profile>/), or why not.
pub fn sibling(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|error| format!("cannot find farm-bench itself: {error}"))?;
    let path = exe.parent().map(|dir| dir.join(name)).ok_or("farm-bench has no directory")?;
    if path.exists() {
        Ok(path)
    } else {
        Err(format!("{} is missing: build it first (cargo build --release -p {name})", path.display()))
    }
}

/// bench-echo-bot as a local process speaking `transport` (`--http` for the http
/// transports).
pub fn echo_process(name: &str, transport: Transport) -> Result<BotSpec, String> {
    let path = sibling("bench-echo-bot")?;
    let mode = if transport.is_http() { " --http" } else { "" };
    Ok(BotSpec::new(name, BotLaunch::Command(format!("{}{mode}", path.display())), transport))
}

/// The Rust Vindinium starter kit (vindinium-kit) as a local process, a client of the
/// worker's Vindinium server, game after game.
pub fn kit_process(name: &str) -> Result<BotSpec, String> {
    let path = sibling("vindinium-kit")?;
    Ok(BotSpec::new(name, BotLaunch::Command(format!("{} arena 1000000", path.display())), Transport::VindiniumServer))
}

/// The Docker sandbox, with the echo and kit images present, or why it cannot be used.
pub async fn docker(worker_id: &str, settings: &DockerSettings) -> Result<DockerSandbox, String> {
    let sandbox = DockerSandbox::connect(worker_id, settings)
        .await
        .map_err(|error| format!("the Docker sandbox cannot be used: {error}"))?;
    for image in [ECHO_IMAGE, ECHO_HTTP_IMAGE, KIT_IMAGE] {
        let present = std::process::Command::new("docker")
            .args(["image", "inspect", "--format", "{{.Id}}", image])
            .output()
            .is_ok_and(|output| output.status.success());
        if !present {
            return Err(format!("image {image} is missing: run deploy/build-images.sh"));
        }
    }
    Ok(sandbox)
}
