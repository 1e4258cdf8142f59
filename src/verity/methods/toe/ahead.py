"""Pending nodes' work run ahead of Algorithm 1, which still consumes it in its own order.

    ahead = Ahead(worker, run_ahead=True, iterations=20)
    work = await ahead.take(node, tree, iteration)   # done now, or earlier beside another
    ahead.unused()                                   # logs of work never consumed

Algorithm 1 takes one node per iteration, in priority order, and between two nodes
aggregates the tree, prunes it and checks its stops; that stays one node at a time. A
node's own work (analysis, retrieval episode, evaluation, decomposition: lines 9-13)
reads nothing but the node (`nodework.py`). So when the loop takes a node whose work is
not done yet, the work of the other pending nodes starts beside it, as one wave
(`verity.schedule.gather`), and each result waits until the loop takes its node.
A wave holds at most as many nodes as the iterations left can still take.

Work that is never taken (the tree stopped first, or a decisive ancestor pruned the
node) has spent its calls: they count in the check's usage and budget, and nothing else
of it shows: not in the tree, the verdict or the trace's calls. A sequential check
(``parallel`` off, or a model that answers one call at a time) never runs ahead.

What would let work done early differ from work done at its turn:
- the evidence cache, keyed by statement: a work reads the cache as the consumed nodes
  left it when it started. If a node with the same statement is consumed before this
  work is taken, a sequential run would have found that node's assessments, so the
  work is done again at its turn and the early one counted as unused;
- the policy: at evaluation it is frozen and greedy, and the warm-up heuristic is a
  rule, so an action depends on the node's state alone. Training samples actions and
  collects episodes in order, and never runs ahead (`grow`'s ``run_ahead``);
- the budget: see `room`.
"""

from __future__ import annotations

from verity import schedule
from verity.llm import budget
from verity.llm.calllog import CallLog
from verity.methods.toe.nodework import NodeWorker, Work
from verity.methods.toe.tree import Node, Tree, priority


def room(per_node: int, certain: int) -> int | None:
    """How many nodes may run ahead under the check's budget now; None when unlimited.

    A node's work makes at most ``per_node`` requests, and the loop may still take
    ``certain`` nodes (this iteration's included). Work runs ahead only while the calls
    left cover all of them and the work run ahead too, so that a check with a call limit
    never stops on it where a sequential one would go on: the bound counts one request
    per step, so only a repair round or a retried request can take it past. Under a
    token or cost limit, whose cost per call is not known in advance, nothing runs ahead.
    """
    spend = budget.current()
    left: list[int] = []
    while spend is not None:
        limits = spend.budget
        if limits.tokens is not None or limits.cost is not None:
            return 0
        if limits.calls is not None:
            left.append(limits.calls - spend.calls)
        spend = spend.parent
    if not left:
        return None
    return max(0, min(left) // per_node - certain)


class Ahead:
    """Starts pending nodes' work beside the node the loop takes; hands each out in turn."""

    def __init__(self, worker: NodeWorker, *, run_ahead: bool, iterations: int) -> None:
        lane = schedule.current()
        self.worker = worker
        self.enabled = run_ahead and lane is not None and lane.parallel
        self.iterations = iterations
        self.done: dict[int, Work] = {}  # by node id: finished, not taken yet
        self.consumed: list[str] = []  # the statements of the nodes taken, in order
        self.redone: list[CallLog] = []

    async def take(self, node: Node, tree: Tree, iteration: int) -> Work:
        """The work of ``node``, popped at ``iteration`` (from 1)."""
        work = self.done.pop(node.id, None)
        if work is not None and node.text in self.consumed[work.started :]:
            self.redone.append(work.log)  # read a cache a sequential run would have filled
            work = None
        if work is None:
            started = len(self.consumed)
            others = self._others(tree, iteration)
            if others:
                wave = await schedule.gather(
                    *(self.worker.run(n, started=started) for n in (node, *others))
                )
                work = wave[0]
                self.done |= {n.id: w for n, w in zip(others, wave[1:], strict=True)}
            else:
                work = await self.worker.run(node, started=started)
        self.consumed.append(node.text)
        return work

    def unused(self) -> list[CallLog]:
        """Logs of work done and never taken: redone, or its node never consumed."""
        return self.redone + [work.log for work in self.done.values()]

    def _others(self, tree: Tree, iteration: int) -> list[Node]:
        """Pending nodes to start beside the one taken, most likely next first."""
        if not self.enabled:
            return []
        later = self.iterations - iteration  # nodes the loop can still take after this one
        allowed = room(self.worker.most_calls, later + 1)
        if allowed is not None:
            later = min(later, allowed)
        waiting = [n for n in tree.queue if n.id not in self.done]
        order = sorted(range(len(waiting)), key=lambda i: (-priority(waiting[i]), i))
        return [waiting[i] for i in order[:later]]
