"""The node Cacher of a v1.7 kube-apiserver, as a FIFO recurrence over node events.

Path of one successful node write (event k, committed to etcd at c_k):
etcd watch -> reflector, which is ready to push at r_k = max(c_k + watch delay,
p_{k-1}), logs the incoming channel's length on a new maximum, and blocks while the
channel (capacity C) is full: the push happens at p_k = max(r_k, s_{k-C}), when the
dispatcher takes event k-C out. The watch cache's store is updated at p_k, so a
kubelet reading its node from the cache sees event k only from p_k on: the store
is as stale as the backlog in front of the channel. Writes themselves are not
delayed (etcd commits them; its watch buffers the backlog), so back-pressure shows
only as staleness, hence 409s, hence fewer real writes.
While the reflector waits to push (the channel full), it holds the watch cache's lock:
a read under that lock (a kubelet's GET ?resourceVersion=0: WaitUntilFreshAndGet) waits
until the push, so status rounds slow down to the dispatcher's pace. A PATCH's
GuaranteedUpdate reads the store itself (watchCache.GetByKey, no lock): it does not wait,
it meets the stale copy.
The dispatcher takes event k at s_k = max(p_k, f_{k-1}) and spends
base + per_watcher x (watchers offered to) on it, plus any time blocked on a full
watcher buffer (f_k). Because the queue is FIFO, event k's whole future is known
when it is committed, so each write costs O(1) work; no per-watcher loops: watchers
of one kind (kubelets, other clients) are symmetric and share one fluid buffer level.
"""

from __future__ import annotations

from collections import deque

from bisector.sim.profile import SimProfile

OTHER_WATCHERS = 5  # scheduler, controller-manager, three heapster-like clients


class NodeCacher:
    def __init__(
        self,
        profile: SimProfile,
        nodes: int,
        *,
        cost_factor: float = 1.0,
        stalls: list[tuple[float, float]] | None = None,
        extra_watchers: int = 0,
    ) -> None:
        self.capacity = profile.incoming_capacity
        size = 1
        while size < self.capacity + 2:
            size *= 2
        self._mask = size - 1
        self._starts = [0.0] * size  # dispatch start s_j of the last `size` events
        self.indexed = profile.trigger_index
        self.base_s = profile.dispatch_base_us * 1e-6 * cost_factor
        self.per_watcher_s = profile.dispatch_per_watcher_us * 1e-6 * cost_factor
        self.kubelets = 0  # registered kubelets, each with a node watch
        # Watches on names of nodes that are not in the cluster (a load generator's): never
        # offered an event with the index, every event without it.
        self.extra_watchers = extra_watchers
        self.last_push = [-1.0] * nodes  # when each node's latest event reached the store
        self.events = 0
        self._received = 0
        self._push_prev = 0.0
        self._finish_prev = 0.0
        self.hwm = 0
        self.saturated_at: float | None = None
        # Lines due in the future (monotonic times), merged into the log by the model.
        self.hwm_marks: deque[tuple[float, int]] = deque()
        self.dispatch_marks: deque[tuple[float, int, float]] = deque()  # (s_k, k, lag)
        self.close_marks: deque[tuple[float, int]] = deque()
        # Fluid buffer level of one kubelet watcher and one other watcher.
        self._kb_cap = float(profile.kubelet_watcher_buffer)
        self._ob_cap = float(profile.watcher_buffer)
        self._kb_drain = profile.kubelet_watcher_drain_per_s
        self._ob_drain = profile.watcher_drain_per_s
        self._block_timeout = profile.watcher_block_timeout_s
        self._kb = 0.0
        self._ob = 0.0
        self._buf_t = 0.0
        self._stalls = sorted(stalls or [])
        self._stall_i = 0
        # (from, until): the reflector holds the watch cache's lock while it pushes an event
        # into the full incoming channel (processEvent calls onEvent under w.Lock()), and a
        # kubelet's GET ?resourceVersion=0 waits (WaitUntilFreshAndGet takes w.RLock()).
        self._locks: deque[tuple[float, float]] = deque()

    def commit(self, t: float, node: int, watch_delay: float) -> None:
        """Node `node` was written at `t`: schedule its event through the cacher."""
        # Hot path (once per node write): plain comparisons instead of max() calls.
        k = self.events + 1  # events are numbered from 1, like the incident's log
        self.events = k
        mask = self._mask
        starts = self._starts
        capacity = self.capacity
        ready = t + watch_delay
        if ready < self._push_prev:  # noqa: PLR1730
            ready = self._push_prev
        # Events up to k-C-1 were taken out before p_{k-1} <= ready.
        received = self._received
        if received < k - 1 - capacity:  # noqa: PLR1730
            received = k - 1 - capacity
        while received < k - 1 and starts[(received + 1) & mask] <= ready:
            received += 1
        self._received = received
        queued = k - 1 - received
        if queued > self.hwm:
            self.hwm = queued
            self.hwm_marks.append((ready, queued))
            if queued >= capacity and self.saturated_at is None:
                self.saturated_at = ready
        push = ready
        if k > capacity:
            freed = starts[(k - capacity) & mask]
            if freed > push:
                push = freed
                self._locks.append((ready, push))
        self._push_prev = push
        self.last_push[node] = push
        start = push if push > self._finish_prev else self._finish_prev
        if self._stall_i < len(self._stalls):
            start = self._apply_stalls(start)
        starts[k & mask] = start
        if self.indexed:
            finish = start + self.base_s + self.per_watcher_s * (1 + OTHER_WATCHERS)
            kubelet_share = 1.0 / self.kubelets if self.kubelets else 1.0
        else:
            offered = self.kubelets + self.extra_watchers + OTHER_WATCHERS
            finish = start + self.base_s + self.per_watcher_s * offered
            kubelet_share = 1.0
        # Watcher buffers: drain since the last event, then add this one.
        elapsed = start - self._buf_t
        self._buf_t = start
        kb = self._kb - elapsed * self._kb_drain
        kb = (kb if kb > 0.0 else 0.0) + kubelet_share
        ob = self._ob - elapsed * self._ob_drain
        ob = (ob if ob > 0.0 else 0.0) + 1.0
        if kb > self._kb_cap or ob > self._ob_cap:
            finish += self._block_on_full_buffers(start, kb, ob)
        else:
            self._kb, self._ob = kb, ob
        self._finish_prev = finish
        if k % 100 == 0:
            self.dispatch_marks.append((start, k, start - t))

    def cache_free_at(self, t: float) -> float:
        """When a read of the watch cache asked at `t` gets it (`t` never decreases)."""
        locks = self._locks
        while locks and locks[0][1] <= t:
            locks.popleft()
        # Readers waiting when the reflector unlocks get the lock before its next push.
        if locks and locks[0][0] < t:
            return locks[0][1]
        return t

    def _apply_stalls(self, start: float) -> float:
        """A dispatcher pause (GC, CPU starvation) delays whatever it overlaps."""
        while self._stall_i < len(self._stalls) and self._stalls[self._stall_i][0] <= start:
            at, length = self._stalls[self._stall_i]
            self._stall_i += 1
            start = start + length if self._finish_prev > at else max(start, at + length)
        return start

    def _block_on_full_buffers(self, start: float, kb: float, ob: float) -> float:
        """Time the dispatcher blocks on full watcher buffers; force-closes stuck ones."""
        blocked = 0.0
        if kb > self._kb_cap:
            wait = (kb - self._kb_cap) / self._kb_drain
            if wait >= self._block_timeout:
                blocked += self._block_timeout
                self.close_marks.append((start + blocked, self.kubelets))
                kb = 0.0
            else:
                blocked += wait
                kb = self._kb_cap
        if ob > self._ob_cap:
            wait = (ob - self._ob_cap) / self._ob_drain
            if wait >= self._block_timeout:
                blocked += self._block_timeout
                self.close_marks.append((start + blocked, OTHER_WATCHERS))
                ob = 0.0
            else:
                blocked += wait
                ob = self._ob_cap
        self._kb, self._ob = kb, ob
        return blocked
