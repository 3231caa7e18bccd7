import RunnelUV

/// Builds the server's lines (protocol "Two kinds of server lines") without Foundation.
///
/// Replies and terminal events are built whole per call; `next` lines are assembled from
/// shared, pre-encoded pieces (see `NextEventPrefix` and `NextEventLine`) so fanning a value
/// out to N subscriptions encodes nothing N times. Longer replies (`list`, `stats`) start from
/// `ServerLineWriter.reply(ok:ref:)`. Every `ref` argument is the request's exact `ref` bytes
/// (`ScannedRequest.scalarRef()`), echoed unchanged; nil leaves `ref` out. Stateless.
public enum EventEncoder {
    /// `{"ok":true,"ref":R}\n`.
    public static func ok(ref: UnsafeRawBufferPointer?) -> [UInt8] {
        var line = ServerLineWriter.reply(ok: true, ref: ref)
        return line.finish()
    }

    /// `{"ok":false,"ref":R,"code":C,"message":M,"stage":N}\n`; `stage` only when given.
    public static func errorReply(ref: UnsafeRawBufferPointer?, code: String, message: String, stage: Int? = nil)
        -> [UInt8]
    {
        var line = ServerLineWriter.reply(ok: false, ref: ref)
        line.member("code", string: code)
        line.member("message", string: message)
        if let stage { line.member("stage", integer: stage) }
        return line.finish()
    }

    /// The reply to a `pub` with a `ref`: `{"ok":true,"ref":R,"receivers":N}\n`.
    public static func published(ref: UnsafeRawBufferPointer?, receivers: Int) -> [UInt8] {
        var line = ServerLineWriter.reply(ok: true, ref: ref)
        line.member("receivers", integer: receivers)
        return line.finish()
    }

    /// The reply to a `sub`: `{"ok":true,"ref":R,"sid":S}\n`.
    public static func subscribed(ref: UnsafeRawBufferPointer?, sid: String) -> [UInt8] {
        var line = ServerLineWriter.reply(ok: true, ref: ref)
        line.member("sid", string: sid)
        return line.finish()
    }

    /// The `next` line of a subject subscription (shared pieces).
    public static func next(_ prefix: NextEventPrefix, value: RawJSON) -> NextEventLine {
        NextEventLine(prefix: prefix, value: value)
    }

    /// The `next` line of a pattern subscription (shared pieces).
    public static func next(_ prefix: NextEventPrefix, subject: EncodedSubjectName, value: RawJSON) -> NextEventLine {
        NextEventLine(prefix: prefix, subject: subject, value: value)
    }

    /// `{"ev":"error","sid":S,"code":C,"message":M,"stage":N}\n`; `stage` only when given.
    public static func errorEvent(sid: String, code: String, message: String, stage: Int? = nil) -> ByteBuffer {
        var line = ServerLineWriter.event("error", sid: sid)
        line.member("code", string: code)
        line.member("message", string: message)
        if let stage { line.member("stage", integer: stage) }
        return line.finishBuffer()
    }

    /// `{"ev":"completed","sid":S}\n`.
    public static func completedEvent(sid: String) -> ByteBuffer {
        var line = ServerLineWriter.event("completed", sid: sid)
        return line.finishBuffer()
    }

    /// `{"ev":"dropped","sid":S,"count":N}\n`.
    public static func droppedEvent(sid: String, count: Int) -> ByteBuffer {
        var line = ServerLineWriter.event("dropped", sid: sid)
        line.member("count", integer: count)
        return line.finishBuffer()
    }

    /// `{"ev":"closing","code":C}\n`, the last line to a slow consumer.
    public static func closingEvent(code: String) -> ByteBuffer {
        var line = ServerLineWriter()
        line.member("ev", string: "closing")
        line.member("code", string: code)
        return line.finishBuffer()
    }
}
