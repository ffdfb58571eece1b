# The java layout's compile (worker/src/build/layout.rs): run by the farm's wrapper under
# sh -e in /scratch/src, in the layout's toolchain container; leaves the bot in /scratch/out.
main=Bot
if [ -f Main-Class ]; then main=$(tr -d ' \t\r\n' < Main-Class); fi
case $main in ''|*[!A-Za-z0-9_.\$]*) echo "matchfarm: Main-Class must hold one class name, such as Bot or com.example.Bot" >&2; exit 1;; esac
find src -type f -name '*.java' | sed 's/[\\"]/\\&/g; s/.*/"&"/' > /scratch/tmp/sources.txt
mkdir -p /scratch/classes
javac -J-XX:+UseSerialGC -J-XX:-UsePerfData -J-XX:TieredStopAtLevel=1 -encoding UTF-8 -d /scratch/classes @/scratch/tmp/sources.txt
(cd src && find . -type f ! -name '*.java' -exec cp --parents {} /scratch/classes/ \;)
if [ ! -f "/scratch/classes/$(printf %s "$main" | tr . /).class" ]; then echo "matchfarm: no class $main (the main class; set it in the file Main-Class) among the compiled classes" >&2; exit 1; fi
jar -J-XX:+UseSerialGC -J-XX:-UsePerfData --create --file /scratch/out/bot.jar --main-class "$main" -C /scratch/classes .
