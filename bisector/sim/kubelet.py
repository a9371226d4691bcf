"""What paces a hollow kubelet's node-status attempts, from the 2017 code and a real run.

Sources (kubernetes 7043372, 31 May 2017):
* pkg/kubelet/kubelet.go: `go wait.Until(kl.syncNodeStatus, kl.nodeStatusUpdateFrequency,
  ...)`: a round starts one status period after the last one ended (sliding);
  `nodeStatusUpdateRetry = 5`: updateNodeStatus makes at most 5 tries per round
  (`for i := 0; i < nodeStatusUpdateRetry; i++`), then gives up until the next round;
* pkg/kubelet/kubelet_node_status.go tryUpdateNodeStatus: a try GETs its node (try 0 from
  the apiserver's watch cache, `resourceVersion=0`; later tries from etcd), runs
  setNodeStatus, and PATCHes the status. setNodeStatus -> setNodeAddress resolves the
  node's own name by DNS on every try (`net.LookupIP(node.Name)`, there since no node IP
  and no IP hostname are set): a hollow node's name (`hollow-node-N`) has no DNS record,
  so every try waits for the resolver's answer, or its 5 s timeout once or twice;
* cmd/kubemark/hollow-node.go createClientConfigFromFile: the hollow node's client has
  QPS 10, burst 20 (the kubelet's own --kube-api-qps 5 / burst 10 of
  cmd/kubelet/app/options is not applied: kubemark hands RunKubelet a ready client). Two
  requests per try allow 5 tries a second, far above what the lookups below leave (about
  one try in 3.5 s): the rate limit never paces a hollow kubelet at these settings, so the
  model has none.

On the procs backend's machine (the resolver of a sandbox that answers some
queries at once and drops others), the real apiserver logs of 1444d25 and 7043372 (100
hollow nodes, status every 1 s, 16,000 extra node watches; 17,191 GET -> PATCH pairs of
one node) put 64.2 % of tries' GET -> PATCH within 2.5 s (median 13 ms), 20.2 % at
5.0-5.1 s and 15.3 % at 10.0-10.3 s: one or two 5 s resolver timeouts. A round with a
1 s period then takes ~3.5 s (median PATCH -> PATCH 1.02 s, mean 3.5 s): the ~8,900
writes of a good build in 5 min, and the ~8,500 PATCH tries of a bad one.
On a GCE kubemark cluster the lookup is answered at once (the default: no delay).
"""

from __future__ import annotations

import random

Lookup = tuple[tuple[float, float], ...]  # (delay seconds, probability); the rest: no delay

# The measured mix above, for runs that model the procs backend on such a machine.
PROCS_NODE_LOOKUP: Lookup = ((5.0, 0.202), (10.0, 0.153))


def check_lookup(lookup: Lookup) -> None:
    """`ValueError` unless every delay is >= 0 and the probabilities add up to at most 1."""
    total = 0.0
    for delay, probability in lookup:
        if delay < 0 or not 0 <= probability <= 1:
            raise ValueError(f"node lookup ({delay}, {probability}): delay >= 0, 0 <= p <= 1")
        total += probability
    if total > 1 + 1e-9:
        raise ValueError(f"node lookup probabilities add up to {total:g}, above 1")


def lookup_table(rng: random.Random, size: int, lookup: Lookup) -> list[float]:
    """`size` draws of one try's lookup delay (a small jitter on each timeout)."""
    check_lookup(lookup)
    out: list[float] = []
    for _ in range(size):
        u = rng.random()
        delay = 0.0
        for seconds, probability in lookup:
            if u < probability:
                delay = seconds + rng.uniform(0.0, 0.05) if seconds > 0 else 0.0
                break
            u -= probability
        out.append(delay)
    return out
