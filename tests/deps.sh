# Sourced by tests/run.sh, examples/demo.sh and bench/: installs the Debian
# packages gpuledger needs to build and test, when they are missing.
gl_install_deps() {
  local packages=(build-essential meson ninja-build pkg-config python3 libsqlite3-dev
                  libcurl4-openssl-dev libcjson-dev libcsv-dev libpcre2-dev libboost-json1.81-dev prometheus
                  sqlite3 curl
                  # the release image (packaging/build-image.sh, image_test.py)
                  buildah mmdebstrap "$@")
  local missing=() p sudo=""
  for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "# installing Debian packages: ${missing[*]}" >&2
  $sudo apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 || {
    echo "# apt-get install failed for: ${missing[*]}" >&2
    return 1
  }
}

# A free TCP port on 127.0.0.1.
gl_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
