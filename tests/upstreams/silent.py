"""An upstream that starts and reads its stdin but never answers anything."""

import sys

for _line in sys.stdin:
    pass
