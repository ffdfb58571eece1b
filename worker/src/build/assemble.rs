//! Assembling a bot's image from a compiled artifact: a build context the farm writes,
//! its Dockerfile the layout's fixed template (the runtime image, named by its id, so
//! nothing can be pulled; the artifact copied to `/bot`; the bot's user, environment and
//! command) and the artifact under `bot/`. No author text is part of the Dockerfile, the
//! context has no `.dockerignore` of the author's, and the template has no step that
//! runs anything or fetches anything.

use bollard::query_parameters::{BuildImageOptions, RemoveImageOptions};
use futures_util::StreamExt;

use super::layout::Layout;
use super::source::{Tree, append};
use super::{BuildError, BuildLog, Built, Run};

/// The label carrying the digest of the source an image was built from.
pub const SOURCE_LABEL: &str = "matchfarm.source";
/// The label carrying the layout an image was built in.
pub const LAYOUT_LABEL: &str = "matchfarm.layout";

/// The Dockerfile of `layout`'s images, on the runtime image `runtime_id`.
fn dockerfile(layout: &Layout, runtime_id: &str) -> String {
    let mut text = format!("FROM {runtime_id}\nCOPY bot/ /bot/\nWORKDIR /bot\nUSER 10001:10001\n");
    for variable in layout.env {
        // Quoted as JSON strings, which the engine reads the same way.
        let (name, value) = variable.split_once('=').unwrap_or((variable, ""));
        text.push_str(&format!("ENV {name}={}\n", serde_json::Value::from(value)));
    }
    text.push_str(&format!("CMD {}\n", serde_json::Value::from(layout.command.to_vec())));
    text
}

/// The build context: the template's Dockerfile and the artifact under `bot/`.
fn context(layout: &Layout, runtime_id: &str, artifact: &Tree) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let dockerfile = dockerfile(layout, runtime_id);
    // Writing to memory cannot fail, and the artifact's paths were checked plain.
    append(&mut builder, "Dockerfile", tar::EntryType::Regular, 0o644, dockerfile.as_bytes(), None)
        .and_then(|()| append(&mut builder, "bot", tar::EntryType::Directory, 0o755, &[], None))
        .and_then(|()| artifact.append_to(&mut builder, "bot/"))
        .expect("a context is written to memory");
    builder.into_inner().expect("a tar in memory")
}

/// Builds image `tag` of `layout` from `artifact`, labelled with its source's
/// `digest`, within the run's deadline and `max_image_mib`.
pub(super) async fn assemble(
    run: &Run<'_>,
    layout: &Layout,
    artifact: &Tree,
    (tag, digest): (&str, &str),
    log: &mut BuildLog,
) -> Result<Built, BuildError> {
    let Run { engine, limits, deadline, .. } = *run;
    let runtime_id = engine.local_image(layout.runtime).await?;
    let options = BuildImageOptions {
        dockerfile: "Dockerfile".to_owned(),
        t: Some(tag.to_owned()),
        networkmode: Some("none".to_owned()),
        rm: true,
        forcerm: true,
        labels: Some(
            [(SOURCE_LABEL.to_owned(), digest.to_owned()), (LAYOUT_LABEL.to_owned(), layout.name.to_owned())].into(),
        ),
        ..Default::default()
    };
    let body = bollard::body_full(bytes::Bytes::from(context(layout, &runtime_id, artifact)));
    let steps = async {
        let mut stream = engine.docker.build_image(options, None, Some(body));
        while let Some(info) = stream.next().await {
            let info = match info {
                Ok(info) => info,
                Err(bollard::errors::Error::DockerStreamError { error }) => {
                    log.push(&error);
                    return Err(BuildError::Failed(error));
                }
                Err(error) => return Err(error.into()),
            };
            if let Some(text) = &info.stream {
                log.push(text);
            }
            if let Some(detail) = info.error_detail {
                let message = detail.message.unwrap_or_default();
                log.push(&message);
                return Err(BuildError::Failed(message));
            }
        }
        Ok(())
    };
    tokio::time::timeout_at(deadline, steps).await.map_err(|_| BuildError::TimedOut(limits.build_secs))??;
    let image = engine.docker.inspect_image(tag).await?;
    let size = image.size.unwrap_or_default().max(0) as u64;
    if size > limits.max_image_mib << 20 {
        let options = RemoveImageOptions { force: true, ..Default::default() };
        engine.docker.remove_image(tag, Some(options), None).await?;
        return Err(BuildError::TooLarge { size_mib: size >> 20, limit_mib: limits.max_image_mib });
    }
    Ok(Built { tag: tag.to_owned(), image_id: image.id.unwrap_or_default(), size })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::layout::LAYOUTS;

    #[test]
    fn the_dockerfile_is_the_farms_template_alone() {
        let python = &LAYOUTS[0];
        let text = dockerfile(python, "sha256:0123");
        assert_eq!(
            text,
            "FROM sha256:0123\nCOPY bot/ /bot/\nWORKDIR /bot\nUSER 10001:10001\n\
             ENV PYTHONPATH=\"/bot/site-packages\"\nENV PYTHONDONTWRITEBYTECODE=\"1\"\nENV PYTHONSAFEPATH=\"1\"\n\
             CMD [\"python3\",\"/bot/bot.py\"]\n"
        );
        // An artifact's own Dockerfile or .dockerignore lands under bot/, as a file.
        let mut source = tar::Builder::new(Vec::new());
        for name in ["Dockerfile", ".dockerignore", "bot.py"] {
            append(&mut source, name, tar::EntryType::Regular, 0o644, b"ADD http://127.0.0.1/x /x", None).expect("tar");
        }
        let artifact =
            Tree::read_archive(source.into_inner().expect("tar").as_slice(), Default::default()).expect("an artifact");
        let context = context(python, "sha256:0123", &artifact);
        let read = Tree::read_archive(context.as_slice(), Default::default()).expect("a context");
        let files: Vec<&str> = read.files().collect();
        assert_eq!(files, ["Dockerfile", "bot/.dockerignore", "bot/Dockerfile", "bot/bot.py"]);
    }
}
