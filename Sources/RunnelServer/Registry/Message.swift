import RunnelUV

/// A subject's name with its JSON string form encoded once, shared by every event that
/// names it (pattern subscriptions' `"subject"`, expressions' `$subject`). Immutable.
public final class SubjectLabel: Sendable {
    public let name: String
    /// `"name"` as a JSON string, quotes included.
    public let json: ByteBuffer

    public init(_ name: String) {
        self.name = name
        var builder = JSONWriter()
        builder.writeString(name)
        self.json = builder.makeBuffer()
    }
}

/// What flows through a named subject and its subscribers' chains: a value and the subject it
/// was published to. The value keeps the exact bytes the client sent until a stage computes a
/// new one.
public struct Message: Sendable {
    public let label: SubjectLabel
    public let value: RawJSON

    public init(label: SubjectLabel, value: RawJSON) {
        self.label = label
        self.value = value
    }
}
