"""python -m mongocore"""

import sys

from mongocore.cli.main import main

sys.exit(main())
