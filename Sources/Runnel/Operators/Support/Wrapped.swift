/// One value from either of two signals of different types, so that operators written for
/// arrays of one type (`combineLatest`, `zip`) can combine a pair.
enum Either<Left: Sendable, Right: Sendable>: Sendable {
    case left(Left)
    case right(Right)

    var left: Left? {
        if case .left(let value) = self { return value }
        return nil
    }

    var right: Right? {
        if case .right(let value) = self { return value }
        return nil
    }
}

extension Signal {
    /// This signal with each value passed through `transform`; errors and completion pass
    /// unchanged. The library's own map, used inside the combining operators.
    func wrapped<U: Sendable>(_ transform: @escaping @Sendable (Value) -> U) -> Signal<U> {
        Signal<U>.operatorSignal(name: "[\(self.name)] -wrapped") { downstream in
            self.subscribe(WrappedSink(downstream: downstream, transform: transform))
        }
    }
}

/// Forwards each value through a transform. Single source: needs no lock.
final class WrappedSink<Value: Sendable, U: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<U>
    private let transform: @Sendable (Value) -> U

    init(downstream: any Subscriber<U>, transform: @escaping @Sendable (Value) -> U) {
        self.downstream = downstream
        self.transform = transform
    }

    func sendNext(_ value: Value) { downstream.sendNext(transform(value)) }
    func sendError(_ error: any Error) { downstream.sendError(error) }
    func sendCompleted() { downstream.sendCompleted() }
    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }
}
