/// An operator signal whose subscription is one sink between the subscriber and a single
/// source (`map`, `filter`): a chain of them subscribes a chain of sinks to the source, and
/// nothing else per operator.
///
/// Subscribing on a current scheduler wraps the subscriber in the operator's sink and
/// subscribes the sink to the source directly, without a subscription of its own: the
/// source's subscription already drops events after a terminal event or disposal and is
/// disposed after a terminal event, the sink forwards both, and the subscriber is handed the
/// source's subscription disposable. So a chain of operators costs one passthrough and one
/// compound disposable per subscription instead of one per operator, and each value one
/// call per operator. Without a current scheduler, the subscription is deferred to the
/// background scheduler like any signal's.
///
/// The sink must hold no state that needs disposal, forward `didSubscribe(with:)` and the
/// terminal events to its downstream, and only send from the events it is sent (which come
/// serialised).
final class SinkSignal<Input: Sendable, Value: Sendable>: Signal<Value>, @unchecked Sendable {
    private let source: Signal<Input>
    private let makeSink: @Sendable (any Subscriber<Value>) -> any Subscriber<Input>

    init(
        name: String, source: Signal<Input>,
        makeSink: @escaping @Sendable (any Subscriber<Value>) -> any Subscriber<Input>
    ) {
        self.source = source
        self.makeSink = makeSink
        super.init(name: name, serializes: false) { downstream in
            source.subscribe(makeSink(downstream))
        }
    }

    @discardableResult
    override func subscribe(_ subscriber: any Subscriber<Value>) -> Disposable {
        guard currentScheduler != nil else { return super.subscribe(subscriber) }
        return source.subscribe(makeSink(subscriber))
    }
}
