#!/bin/sh
# Installs Debian's headless-capable Chromium for the `neuronc compile --report` rendering test
# (tests/tools/report_html_test.cpp). Called from .ci/install-deps; safe to re-run.
set -eu
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
