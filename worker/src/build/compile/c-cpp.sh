# The c-cpp layout's compile (worker/src/build/layout.rs): run by the farm's wrapper under
# sh -e in /scratch/src, in the layout's toolchain container; leaves the bot in /scratch/out.
if [ -f CMakeLists.txt ]; then
  cmake -S . -B /scratch/build -DCMAKE_BUILD_TYPE=Release
  cmake --build /scratch/build --target bot --parallel 2
  set -- $(find /scratch/build -type f -name bot -perm -u+x)
  if [ $# -ne 1 ]; then echo "matchfarm: building the target bot left $# executables named bot under the build directory (1 expected): $*" >&2; exit 1; fi
  cp "$1" /scratch/out/bot
elif [ -f Makefile ]; then
  make
  if [ ! -f bot ] || [ ! -x bot ]; then echo "matchfarm: make left no executable bot at the top of the source" >&2; exit 1; fi
  cp bot /scratch/out/bot
else
  echo "matchfarm: no CMakeLists.txt or Makefile at the top of the source" >&2; exit 1
fi
