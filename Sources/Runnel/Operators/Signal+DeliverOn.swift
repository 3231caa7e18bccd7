extension Signal {
    /// Sends every event on `scheduler` (ReactiveCocoa's `deliverOn:`).
    ///
    /// Each event is scheduled in turn, so they arrive in order on a serial scheduler, even
    /// when `scheduler` is the current one. Completion and errors are delivered the same way,
    /// after the values before them. Nothing is delivered once the subscription is disposed.
    public func deliver(on scheduler: any Scheduler) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -deliverOn: \(scheduler)") { downstream in
            source.subscribe(DeliverOnSink(downstream: downstream, scheduler: scheduler))
        }
    }

    /// Subscribes to this signal on `scheduler` (ReactiveCocoa's `subscribeOn:`): the source's
    /// body runs there, and events arrive on whatever thread the source sends them. Disposal
    /// before the scheduled subscription runs cancels it.
    public func subscribe(on scheduler: any Scheduler) -> Signal<Value> {
        let source = self
        return Signal.operatorSignal(name: "[\(source.name)] -subscribeOn: \(scheduler)") { downstream in
            // The inner subscription joins the chain through `didSubscribe`, so disposal reaches it.
            scheduler.schedule { source.subscribe(downstream) }
        }
    }
}

/// Forwards each event by scheduling it on the scheduler. The scheduler runs one block at a
/// time, so downstream events never overlap; the passthrough below drops them once the
/// subscription is disposed.
final class DeliverOnSink<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let downstream: any Subscriber<Value>
    private let scheduler: any Scheduler

    init(downstream: any Subscriber<Value>, scheduler: any Scheduler) {
        self.downstream = downstream
        self.scheduler = scheduler
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        scheduler.schedule { [downstream] in downstream.sendNext(value) }
    }

    func sendError(_ error: any Error) {
        scheduler.schedule { [downstream] in downstream.sendError(error) }
    }

    func sendCompleted() {
        scheduler.schedule { [downstream] in downstream.sendCompleted() }
    }
}
