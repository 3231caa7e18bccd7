extension Signal {
    /// Turns each value into a signal and merges what those signals send (ReactiveCocoa's
    /// `bind:`), the primitive the other flattening operators are defined by.
    ///
    /// `factory` runs once per subscription and returns the binding, so the binding may keep
    /// per-subscription state in captured variables. The binding is called with each value of
    /// this signal, one at a time, and returns the signal to merge, or nil.
    ///
    /// - Completion: setting `stop` to true, or returning nil, ends the outer side: this signal
    ///   is disposed at once (a returned signal is still merged). The result completes when
    ///   the outer side and every merged signal have completed.
    /// - Error: an error from this signal or any merged signal is sent at once and disposes
    ///   everything.
    /// - Threads: merged signals may send from any thread; one lock serialises what the result
    ///   sends. Each merged subscription is released as soon as it completes.
    public func bind<U: Sendable>(
        _ factory: @escaping @Sendable () -> (_ value: Value, _ stop: inout Bool) -> Signal<U>?
    ) -> Signal<U> {
        let source = self
        return Signal<U>.operatorSignal(name: "[\(source.name)] -bind:") { downstream in
            let sink = BindSink(downstream: downstream, binding: factory())
            downstream.didSubscribe(with: sink.inners)
            return source.subscribe(sink)
        }
    }
}

/// The outer subscriber of `bind`: calls the binding and subscribes what it returns.
///
/// Outer events are serialised by the source, so `binding` and `outerDone` need no lock;
/// everything sent downstream goes through `lock` because merged signals may send from any
/// thread.
final class BindSink<Value: Sendable, U: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<U>
    /// Released once the outer side ends. Touched only by outer events.
    private var binding: ((Value, inout Bool) -> Signal<U>?)?
    /// Written in `didSubscribe`, before any outer event.
    private var outer: CompoundDisposable?
    /// The live merged subscriptions; each removes itself when it completes.
    let inners = CompoundDisposable()

    /// Recursive: a subscriber may send back into a merged source while it is being sent to.
    let lock = Lock(recursive: true)
    /// Guarded by `lock`: the outer side (until it ends) plus each live merged signal.
    private var active = 1
    /// Guarded by `lock`.
    private(set) var terminated = false

    init(downstream: any Subscriber<U>, binding: @escaping (Value, inout Bool) -> Signal<U>?) {
        self.downstream = downstream
        self.binding = binding
    }

    func didSubscribe(with disposable: CompoundDisposable) {
        outer = disposable
        downstream.didSubscribe(with: disposable)
    }

    func sendNext(_ value: Value) {
        guard let binding else { return }
        var stop = false
        let signal = binding(value, &stop)
        if let signal {
            lock.withLock { active += 1 }
            signal.subscribe(BindInnerSink(parent: self))
        }
        if signal == nil || stop {
            endOuter()
            outer?.dispose()
            finishOne()
        }
    }

    func sendError(_ error: any Error) {
        guard binding != nil else { return }
        endOuter()
        fail(error)
    }

    func sendCompleted() {
        guard binding != nil else { return }
        endOuter()
        finishOne()
    }

    /// Drops the binding (and what it captured): no outer event is handled after this.
    private func endOuter() {
        binding = nil
    }

    /// Sends a merged value.
    func forward(_ value: U) {
        lock.withLock {
            guard !terminated else { return }
            downstream.sendNext(value)
        }
    }

    func fail(_ error: any Error) {
        lock.withLock {
            guard !terminated else { return }
            terminated = true
            downstream.sendError(error)
        }
    }

    /// One side has completed: completes the result when it was the last.
    func finishOne() {
        lock.withLock {
            active -= 1
            guard active == 0, !terminated else { return }
            terminated = true
            downstream.sendCompleted()
        }
    }
}

/// Subscribes to one signal returned by a binding and hands its events to the `BindSink`.
private final class BindInnerSink<Value: Sendable, U: Sendable>: Subscriber, @unchecked Sendable {
    private let parent: BindSink<Value, U>
    /// Written in `didSubscribe`, before any event of this subscription.
    private var subscription: CompoundDisposable?

    init(parent: BindSink<Value, U>) { self.parent = parent }

    func didSubscribe(with disposable: CompoundDisposable) {
        subscription = disposable
        parent.inners.add(disposable)
    }

    func sendNext(_ value: U) { parent.forward(value) }

    func sendError(_ error: any Error) { parent.fail(error) }

    func sendCompleted() {
        // Release the finished subscription so a long-lived bind does not grow.
        if let subscription { parent.inners.remove(subscription) }
        parent.finishOne()
    }
}
