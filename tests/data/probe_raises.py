"""A stand-in probe that breaks like a buggy probe would: a stage line, then an uncaught error."""

import sys

sys.stderr.write("vkdoctor-probe: stage import\n")
print(1 / 0)
