#!/bin/sh
# Runs INSIDE the debootstrapped root (chroot DIR /bin/sh /setup-root.sh), called by
# deploy/build-images.sh: installs python3 (with requests, which the Vindinium Python
# starter kit uses) and nodejs, adds the `bot` user and strips what a bot never needs. Arguments: MIRROR [SECURITY_MIRROR].
set -eu
mirror=$1
security=${2:-}
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The same mirror as the host, with updates and (when the host has it) security.
{
    echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    if [ -n "$security" ]; then echo "deb $security bookworm-security main"; fi
} >/etc/apt/sources.list

# Nothing starts services in a chroot.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
chmod 755 /usr/sbin/policy-rc.d

# Never install docs, man pages or translations (now and in images built FROM this one).
cat >/etc/dpkg/dpkg.cfg.d/01-matchfarm-nodoc <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
CFG
cat >/etc/apt/apt.conf.d/01-matchfarm-small <<'CFG'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
CFG

apt-get update -qq
apt-get upgrade -y -qq >/dev/null
apt-get install -y -qq --no-install-recommends python3 python3-requests nodejs >/dev/null

groupadd --gid 10001 bot
useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp \
    --shell /usr/sbin/nologin --comment "matchfarm bot" bot

# Clean up: apt lists and caches, docs (copyright files kept), man pages, locales, logs.
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old /var/lib/dpkg/*-old \
    /var/log/apt /var/log/dpkg.log /var/log/alternatives.log /var/log/bootstrap.log
find /usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete
find /usr/share/doc -mindepth 1 -type d -empty -delete
rm -rf /usr/share/man/* /usr/share/info/* /usr/share/lintian /usr/share/linda
find /usr/share/locale -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
rm -f /usr/sbin/policy-rc.d
# The farm's containers get their own; none of the build machine's may stay behind.
: >/etc/resolv.conf
echo localhost >/etc/hostname
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >/etc/hosts
