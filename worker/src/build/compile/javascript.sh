# The javascript layout's compile (worker/src/build/layout.rs): run by the farm's wrapper under
# sh -e in /scratch/src, in the layout's toolchain container; leaves the bot in /scratch/out.
cp -R ./. /scratch/out/
node --check /scratch/out/bot.js
