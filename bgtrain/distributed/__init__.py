"""Beyond one machine: seeded work units run in process or on a Ray cluster (docs/distributed.md).

``executor`` (the seam and the in-process executor), ``ray_executor`` (Ray actors), ``work`` (the
work units), ``shards`` (atomic result shards and resume), ``duels`` (bench and league as chunked
jobs), ``selfplay`` (training with self-play actors and one learner).
"""
