extension Signal {
    /// The latest values of all `signals`, as an array in their order, each time any of them
    /// sends, once every one has sent at least once (ReactiveCocoa's `combineLatest:`).
    ///
    /// Completes when all of them have completed (at once for an empty array). The first
    /// error from any of them is sent on and disposes the others. Disposing the result
    /// disposes every source.
    public static func combineLatest<T: Sendable>(_ signals: [Signal<T>]) -> Signal<[T]> where Value == [T] {
        Signal<[T]>.operatorSignal(name: "+combineLatest: \(signals)") { downstream in
            CombineLatestState(signals.count, downstream).start(signals)
            return nil
        }
    }

    /// The latest values of all `signals` reduced by `reduce`, each time any of them sends,
    /// once every one has sent (ReactiveCocoa's `combineLatest:reduce:`). Completion and
    /// errors as in `combineLatest(_:)`.
    public static func combineLatest<T: Sendable>(
        _ signals: [Signal<T>], reduce: @escaping @Sendable ([T]) -> Value
    ) -> Signal<Value> {
        Signal<[T]>.combineLatest(signals).wrapped(reduce)
    }

    /// Pairs of the latest value of this signal and of `other`, each time either sends, once
    /// both have sent (ReactiveCocoa's `combineLatestWith:`). Completes when both have
    /// completed; an error from either is sent on and disposes the other.
    public func combineLatest<U: Sendable>(with other: Signal<U>) -> Signal<(Value, U)> {
        Signal<[Either<Value, U>]>.combineLatest([self.wrapped { .left($0) }, other.wrapped { .right($0) }])
            .wrapped { pair in (pair[0].left!, pair[1].right!) }
    }
}

/// The state of one `combineLatest` subscription, guarded by the output's lock.
final class CombineLatestState<T: Sendable>: @unchecked Sendable {
    private let output: SerializedOutput<[T]>
    private var latest: [T?]
    private var missing: Int
    private var active: Int

    init(_ count: Int, _ downstream: any Subscriber<[T]>) {
        output = SerializedOutput(downstream)
        latest = Array(repeating: nil, count: count)
        missing = count
        active = count
    }

    func start(_ signals: [Signal<T>]) {
        output.lock.withLock {
            if signals.isEmpty { output.sendCompleted() }
            for (index, signal) in signals.enumerated() {
                if output.isStopped { return }
                signal.subscribe(output.member { [self] event in on(event, from: index) })
            }
        }
    }

    /// Called with the lock held.
    private func on(_ event: Event<T>, from index: Int) {
        switch event {
        case .next(let value):
            if latest[index] == nil { missing -= 1 }
            latest[index] = value
            if missing == 0 { output.sendNext(latest.map { $0! }) }
        case .error(let error):
            output.sendError(error)
        case .completed:
            active -= 1
            if active == 0 { output.sendCompleted() }
        }
    }
}
