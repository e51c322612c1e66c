"""dycl-bench: speed, compile cost and numeric error of DyCL against its peers on the zoo.

Modules: systems (what is compared), oracle (the static path per input), timing
(interleaved rounds), numerics (error vs eager), run (one network), report (JSON,
markdown, chart), cli (`dycl-bench`, `python -m dycl.bench`).
"""
