/// The requests of protocol version 1.
public enum RequestOp: String, CaseIterable, Sendable {
    case pub, sub, unsub, create, complete, error, delete, list, stats, ping, auth

    /// The op spelled by the unescaped UTF-8 `name`, compared without allocating.
    static func matching(_ name: UnsafeRawBufferPointer) -> RequestOp? {
        switch name.count {
        case 3:
            if ByteMatch.equals(name, "pub") { return .pub }
            if ByteMatch.equals(name, "sub") { return .sub }
            return nil
        case 4:
            if ByteMatch.equals(name, "list") { return .list }
            if ByteMatch.equals(name, "ping") { return .ping }
            if ByteMatch.equals(name, "auth") { return .auth }
            return nil
        case 5:
            if ByteMatch.equals(name, "unsub") { return .unsub }
            if ByteMatch.equals(name, "error") { return .error }
            if ByteMatch.equals(name, "stats") { return .stats }
            return nil
        case 6:
            if ByteMatch.equals(name, "create") { return .create }
            if ByteMatch.equals(name, "delete") { return .delete }
            return nil
        case 8: return ByteMatch.equals(name, "complete") ? .complete : nil
        default: return nil
        }
    }
}

/// What a request's `op` field names: one of ours, or something else (reply `unknown_op`).
public enum RequestOperation: Sendable, Equatable {
    case known(RequestOp)
    case unknown(String)
}
