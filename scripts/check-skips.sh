#!/usr/bin/env bash
# Lists every test ctest did not run to the end (GTEST_SKIP, or not run at all) with its reason,
# and fails when any reason is other than the shared fixtures (../shared) being absent.
#
#   ctest --test-dir build --output-junit "$PWD/build/ctest-junit.xml"
#   scripts/check-skips.sh build/ctest-junit.xml
#
# Why: a skipped test is a green test that checked nothing. The only skip that is expected is a
# test that reads ../shared in a clone without it; those skip with a message that starts with
# "shared fixture absent:" (tests/support/shared_fixture.h). A tool that scripts/setup.sh should
# have installed, a fixture missing from the repository, or a test ctest could not start is a
# failure here, so a machine that lacks a package cannot pass CI by skipping what needs it.
# Exit status: 0 when every skip is a shared-fixture skip, 1 otherwise, 2 on a bad argument.
set -euo pipefail
if [ $# -ne 1 ] || [ ! -r "$1" ]; then
  echo "usage: scripts/check-skips.sh CTEST_JUNIT_XML (from ctest --output-junit)" >&2
  exit 2
fi
exec python3 - "$1" <<'PY'
import sys
import xml.etree.ElementTree as ET

MARKER = "shared fixture absent:"

def reason(case):
    """The skip message GTEST_SKIP printed (the lines after 'FILE:LINE: Skipped'), else ctest's."""
    out = (case.findtext("system-out") or "").splitlines()
    for i, line in enumerate(out):
        if line.endswith(": Skipped"):
            lines = []
            for more in out[i + 1:]:
                if more.startswith("[  SKIPPED ]"):
                    break
                lines.append(more)
            text = " ".join(l.strip() for l in lines if l.strip())
            return text or "(GTEST_SKIP without a message)"
    skipped = case.find("skipped")
    message = skipped.get("message", "") if skipped is not None else ""
    return "not run: " + (message or case.get("status", "?"))

try:
    root = ET.parse(sys.argv[1]).getroot()
except (ET.ParseError, OSError) as e:
    print(f"check-skips: {sys.argv[1]}: cannot read it: {e}", file=sys.stderr)
    sys.exit(2)

cases = root.iter("testcase")
shared, other = [], []
total = 0
for case in cases:
    total += 1
    status = case.get("status", "")
    if status in ("run", "fail"):  # failures are ctest's to report
        continue
    why = reason(case)
    (shared if why.startswith(MARKER) else other).append((case.get("name", "?"), why))

for name, why in shared:
    print(f"check-skips: skipped (accepted) {name}: {why}")
for name, why in other:
    print(f"check-skips: SKIPPED {name}: {why}")
print(f"check-skips: {total} tests, {len(shared)} skipped for absent shared fixtures, "
      f"{len(other)} skipped for another reason")
if other:
    print("check-skips: a test may skip only when ../shared is absent (message starting with "
          f"'{MARKER}'); install what scripts/setup.sh installs, or fix the test", file=sys.stderr)
    sys.exit(1)
PY
