# The rust layout's compile (worker/src/build/layout.rs): run by the farm's wrapper under
# sh -e in /scratch/src, in the layout's toolchain container; leaves the bot in /scratch/out.
export CARGO_HOME=/scratch/cargo CARGO_TARGET_DIR=/scratch/target CARGO_NET_OFFLINE=true
cargo metadata --no-deps --format-version 1 > /scratch/tmp/metadata.json
bin=$(python3 -c '
import json, sys
bins = [t["name"] for p in json.load(sys.stdin)["packages"] for t in p["targets"] if "bin" in t["kind"]]
if len(bins) != 1:
    sys.exit("matchfarm: exactly one binary target is needed (the bot); found %d: %s" % (len(bins), " ".join(bins) or "none"))
print(bins[0])' < /scratch/tmp/metadata.json)
cargo build --release --bin "$bin"
cp "$CARGO_TARGET_DIR/release/$bin" /scratch/out/bot
