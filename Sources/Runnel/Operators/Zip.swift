extension Signal {
    /// Arrays of the n-th values of all `signals`, in their order: one array as soon as each
    /// has sent its n-th value (ReactiveCocoa's `zip:`).
    ///
    /// Completes as soon as no further array is possible: when a source has completed and
    /// none of its values is waiting (at once for an empty array). The first error from any
    /// source is sent on and disposes the others. Disposing the result disposes every source.
    public static func zip<T: Sendable>(_ signals: [Signal<T>]) -> Signal<[T]> where Value == [T] {
        Signal<[T]>.operatorSignal(name: "+zip: \(signals)") { downstream in
            ZipState(signals.count, downstream).start(signals)
            return nil
        }
    }

    /// The n-th values of all `signals` reduced by `reduce` (ReactiveCocoa's `zip:reduce:`).
    /// Completion and errors as in `zip(_:)`.
    public static func zip<T: Sendable>(_ signals: [Signal<T>], reduce: @escaping @Sendable ([T]) -> Value)
        -> Signal<Value>
    {
        Signal<[T]>.zip(signals).wrapped(reduce)
    }

    /// Pairs of the n-th values of this signal and of `other` (ReactiveCocoa's `zipWith:`).
    /// Completes once one side has completed and none of its values is waiting; an error
    /// from either is sent on and disposes the other.
    public func zip<U: Sendable>(with other: Signal<U>) -> Signal<(Value, U)> {
        Signal<[Either<Value, U>]>.zip([self.wrapped { .left($0) }, other.wrapped { .right($0) }])
            .wrapped { pair in (pair[0].left!, pair[1].right!) }
    }
}

/// The state of one `zip` subscription, guarded by the output's lock.
final class ZipState<T: Sendable>: @unchecked Sendable {
    private let output: SerializedOutput<[T]>
    private var buffers: [RingBuffer<T>]
    private var completed: [Bool]

    init(_ count: Int, _ downstream: any Subscriber<[T]>) {
        output = SerializedOutput(downstream)
        buffers = Array(repeating: RingBuffer(), count: count)
        completed = Array(repeating: false, count: count)
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
            buffers[index].append(value)
            if buffers.allSatisfy({ !$0.isEmpty }) {
                var tuple: [T] = []
                tuple.reserveCapacity(buffers.count)
                for position in buffers.indices { tuple.append(buffers[position].popFirst()!) }
                output.sendNext(tuple)
            }
        case .error(let error):
            output.sendError(error)
            return
        case .completed:
            completed[index] = true
        }
        // Once a finished source has nothing left waiting, no further tuple can be made.
        if buffers.indices.contains(where: { completed[$0] && buffers[$0].isEmpty }) {
            output.sendCompleted()
        }
    }
}
