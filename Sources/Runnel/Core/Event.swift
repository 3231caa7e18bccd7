/// One event of a signal, as a value (ReactiveCocoa's `RACEvent`): what `materialize` sends
/// and `dematerialize` reads.
public enum Event<Value: Sendable>: Sendable {
    case next(Value)
    case error(any Error)
    case completed

    /// Whether this is `error` or `completed`.
    public var isTerminal: Bool {
        if case .next = self { return false }
        return true
    }

    /// The value of a `next` event.
    public var value: Value? {
        if case .next(let value) = self { return value }
        return nil
    }

    /// The error of an `error` event.
    public var error: (any Error)? {
        if case .error(let error) = self { return error }
        return nil
    }

    /// Sends this event to `subscriber`.
    public func send<S: Subscriber>(to subscriber: S) where S.Value == Value {
        switch self {
        case .next(let value): subscriber.sendNext(value)
        case .error(let error): subscriber.sendError(error)
        case .completed: subscriber.sendCompleted()
        }
    }
}

extension Event: CustomStringConvertible {
    public var description: String {
        switch self {
        case .next(let value): return "next(\(value))"
        case .error(let error): return "error(\(error))"
        case .completed: return "completed"
        }
    }
}
