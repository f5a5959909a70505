#!/bin/sh
# Final touches shared by the Dockerfile and build-offline, run as root inside
# the new root filesystem after the packages are installed.
set -eu

# Commands run as the host user's uid (often unknown to /etc/passwd), so the
# sandbox bind-mounts its own passwd/group; HOME is a tmpfs mounted here.
mkdir -p /home/sandbox
chmod 0777 /home/sandbox

# The workspace belongs to the host user; let git inside the sandbox use it.
git config --system safe.directory '*'
git config --system init.defaultBranch main

# No setuid/setgid programs: nothing in the sandbox can regain privileges.
find / -xdev -type f -perm /6000 -exec chmod ug-s {} + 2>/dev/null || true

apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
  /var/cache/debconf/*-old /tmp/* /root/.cache
