"""The tensor-network oracle's contraction machinery: the path search (``path_search``: cotengra's
HyperOptimizer scored by this machine's executor rates), the rates themselves (``executor_rates``:
learned from the oracle's contractions, passed in as a value), and the executor (``linear_contraction``:
batched matmuls with blocked permutes of 2 x ... x 2 axes, ``binary_permute``; ``log_contraction``: the
cold route in logs). The method's own module, which builds the network from a model, is
``evaluators.oracles.tensor_network``. Nothing here imports the linear-algebra package.
"""
