#!/usr/bin/env bash
# Run here (a machine with PyPI and Debian's archive): gathers what the GPU machine lacks into two
# git-ignored folders that travel with the working tree: .whl/ (wheels for the GPU machine's
# Python) and .gl/ (Debian 12's Vulkan loader and GLVND, as .debs to unpack there).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${GPU_PYTHON_VERSION:-3.12}
mkdir -p .whl .gl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl wgpu==0.32.0 cffi pycparser rendercanvas distro
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/vkdoctor-amd64-lists'
mkdir -p /tmp/vkdoctor-amd64-lists/partial
apt-get $o update -qq
(cd .gl && apt-get $o download libvulkan1 libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2)
# vulkaninfo for the benchmark there, and the libraries it links that the machine may lack
# (run.sh unpacks only those the machine has no copy of)
mkdir -p .gl/extra
(cd .gl/extra && apt-get $o download vulkan-tools libwayland-client0 libxcb1 libx11-6 libxau6 \
    libxdmcp6 libbsd0 libmd0 libffi8)
ls -la .whl .gl
