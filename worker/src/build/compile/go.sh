# The go layout's compile (worker/src/build/layout.rs): run by the farm's wrapper under
# sh -e in /scratch/src, in the layout's toolchain container; leaves the bot in /scratch/out.
export GOCACHE=/scratch/cache/go GOPATH=/scratch/go GOPROXY=off GOSUMDB=off GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=
if [ -d vendor ]; then GOFLAGS=-mod=vendor; fi
go build -trimpath -ldflags='-s -w' -o /scratch/out/bot .
