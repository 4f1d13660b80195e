#!/usr/bin/env bash
# Installs what onnxcc needs on a fresh Debian machine and does nothing when it is there:
# the cross toolchains and qemu (Debian packages) and the Python packages (into .venv/).
set -euo pipefail
cd "$(dirname "$0")"

DEBIAN_PACKAGES=(
    gcc libc6-dev binutils make cmake
    gcc-arm-none-eabi libnewlib-arm-none-eabi
    gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf
    gcc-arm-linux-gnueabihf libc6-dev-armhf-cross
    gcc-aarch64-linux-gnu libc6-dev-arm64-cross
    lib32gcc-12-dev
    qemu-user qemu-system-arm qemu-system-misc qemu-system-x86
)
missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# the venv is (re)filled only when requirements.txt or pyproject.toml changed since the last
# install; onnxcc itself goes in editable (.venv/bin/onnxcc runs this checkout's code)
stamp=.venv/.requirements.sha256
want=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/onnxcc ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing Python packages into .venv/"
    python3 -m venv .venv
    .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
    .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
        --no-build-isolation -e .
    echo "$want" > "$stamp"
fi
