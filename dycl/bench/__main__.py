import sys

from dycl.bench.cli import main

sys.exit(main())
