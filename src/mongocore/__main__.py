"""python -m mongocore"""

import sys

from mongocore.cli import main

sys.exit(main())
