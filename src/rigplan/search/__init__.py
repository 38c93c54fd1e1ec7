"""Plan search: the candidate space of layouts, its vectorized (numpy) evaluation, the Pareto front.

Pure: arrays of layouts in, arrays of memory and step time out; nothing is looked up here.

May import: domain, estimate, units, errors.
"""
