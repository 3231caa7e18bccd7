/// A subject that replays its last `capacity` values to each new subscriber, then its
/// terminal event if it has one (ReactiveCocoa's `RACReplaySubject`).
///
/// Live values reach every subscriber in the order they were recorded, even with several
/// threads sending: a new subscriber's catch-up and the live events go through the same
/// drain queue, so what it is replayed and what it then sees live never overlap or reorder.
public class ReplaySubject<Value: Sendable>: Subject<Value>, @unchecked Sendable {
    /// How many values are kept; `Int.max` for all of them.
    public let capacity: Int

    /// A replay subject keeping the last `capacity` values (all of them by default), shared
    /// between threads or confined to one (`threading`).
    public init(capacity: Int = .max, threading: SubjectThreading = .shared) {
        precondition(capacity >= 0, "ReplaySubject capacity must be >= 0")
        self.capacity = capacity
        super.init(historyCapacity: capacity, threading: threading)
    }

    /// A replay subject keeping the last `capacity` values, and of those only as many of the
    /// newest as `weight` says weigh at most `maxWeight` together (their size in bytes, say):
    /// older ones are dropped first. The newest value is kept whatever it weighs.
    /// `dropped`, when given, is told of each value let go to make room or by
    /// `dropReplayed(while:)`, oldest first, under the subject's lock (it must not call back).
    public init(
        capacity: Int, maxWeight: Int, weight: @escaping @Sendable (Value) -> Int,
        dropped: (@Sendable (Value) -> Void)? = nil, threading: SubjectThreading = .shared
    ) {
        precondition(capacity >= 0, "ReplaySubject capacity must be >= 0")
        self.capacity = capacity
        super.init(
            historyCapacity: capacity, maxWeight: maxWeight, weigh: weight, dropped: dropped, threading: threading)
    }

    /// A replay subject as it was left: keeping the last `capacity` of `values` (oldest first),
    /// bounded by `maxWeight` as above when `weight` is given, and, when `terminal` is given,
    /// terminated by it (`error` or `completed`), so a late subscriber gets those values and
    /// then the terminal event. For restoring a subject kept elsewhere, such as on disk.
    public init(
        capacity: Int, retaining values: some Sequence<Value>, terminal: Event<Value>? = nil,
        maxWeight: Int = .max, weight: (@Sendable (Value) -> Int)? = nil, dropped: (@Sendable (Value) -> Void)? = nil,
        threading: SubjectThreading = .shared
    ) {
        precondition(capacity >= 0, "ReplaySubject capacity must be >= 0")
        self.capacity = capacity
        super.init(
            historyCapacity: capacity, initial: Array(values), terminal: terminal, maxWeight: maxWeight, weigh: weight,
            dropped: dropped, threading: threading)
    }

    /// What the values a new subscriber would be replayed weigh together, by the `weight` the
    /// subject was made with (0 without one).
    public var retainedWeight: Int { roster.withLock { historyWeight } }

    /// The values a new subscriber would be replayed now, oldest first.
    public var replayedValues: [Value] { roster.withLock { history.elements } }

    /// The oldest value a new subscriber would be replayed now, without copying the others.
    public var oldestReplayedValue: Value? { roster.withLock { history.first } }

    /// Stops replaying the oldest values while `isStale` says so of them (their age, say),
    /// newest included, and returns how many it let go. A subscriber already replayed them
    /// keeps what it got.
    @discardableResult
    public func dropReplayed(while isStale: (Value) -> Bool) -> Int { dropHistory(while: isStale) }
}
