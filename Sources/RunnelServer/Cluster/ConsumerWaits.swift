/// What waits for this node's consumer of a stream to deliver it as far as a seq: the replies
/// to changes the node stored (a `sub` after the reply finds the value here), and `sub`s with
/// a `from` another node gave, beyond what this node has delivered yet (they resume once it has).
/// Each waits by its epoch's stream; one may also stop waiting (`cancel`, its deadline come).
///
/// Thread rules: a value, held by `ClusterStreams` on the first loop.
struct ConsumerWaits {
    private var byEpoch: [String: [(seq: UInt64, id: UInt64)]] = [:]
    private var actions: [UInt64: () -> Void] = [:]
    private var lastID: UInt64 = 0

    /// Whether anything waits.
    var isEmpty: Bool { actions.isEmpty }

    /// `action` is to run once the stream of `epoch` is delivered as far as `seq`; its id.
    mutating func add(epoch: String, seq: UInt64, _ action: @escaping () -> Void) -> UInt64 {
        lastID += 1
        byEpoch[epoch, default: []].append((seq, lastID))
        actions[lastID] = action
        return lastID
    }

    /// The action `id` stops waiting: returned, unless it ran or stopped before.
    mutating func cancel(_ id: UInt64) -> (() -> Void)? { actions.removeValue(forKey: id) }

    /// The stream of `epoch` was delivered as far as `seq`: what waited for no more, in the order
    /// added, to run.
    mutating func delivered(_ seq: UInt64, epoch: String) -> [() -> Void] {
        guard let waiting = byEpoch[epoch] else { return [] }
        var due: [() -> Void] = []
        var left: [(seq: UInt64, id: UInt64)] = []
        for wait in waiting {
            if wait.seq <= seq {
                if let action = actions.removeValue(forKey: wait.id) { due.append(action) }
            } else if actions[wait.id] != nil {
                left.append(wait)
            }
        }
        byEpoch[epoch] = left.isEmpty ? nil : left
        return due
    }

    /// The stream of `epoch` is no longer consumed here: everything that waited for it, to run.
    mutating func ended(epoch: String) -> [() -> Void] { delivered(.max, epoch: epoch) }
}
