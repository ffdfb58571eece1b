# The python layout's compile (worker/src/build/layout.rs): run by the farm's wrapper under
# sh -e in /scratch/src, in the layout's toolchain container; leaves the bot in /scratch/out.
cp -R ./. /scratch/out/
rm -rf /scratch/out/wheels
if [ -n "$(find wheels -maxdepth 1 -name '*.whl' 2>/dev/null)" ]; then
  python3 -m pip install --no-index --no-deps --no-cache-dir --disable-pip-version-check --target /scratch/out/site-packages wheels/*.whl
fi
python3 -m compileall -q --invalidation-mode checked-hash -x '^/scratch/out/site-packages/' /scratch/out
