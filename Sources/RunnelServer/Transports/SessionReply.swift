import RunnelJSON
import RunnelProtocol

/// A reply to one request as a value, handed to a transport (`SessionOutput.reply`): every
/// reply a session writes goes out this way. A transport that answers in a framing of its own
/// (an SSE stream's HTTP answer) reads the value; the line protocols write its line, made from
/// the value by one rule (`ServerLineWriter.reply(_:)`), also used where the HTTP front door
/// answers with the same reply.
///
/// Thread rules: a value, made and used on the loop thread. Lifetime rule: owns its fields.
package struct SessionReply {
    /// The request's `ref`, its exact bytes, echoed unchanged; nil when it had none.
    let ref: RawJSON?
    package let outcome: Outcome

    /// What a reply says besides its `ref`: the members of its line after `ok` and `ref`.
    ///
    /// Thread rules: a value, like its reply, which may be made on one loop and written on
    /// another (a request the subjects' owner answers, `ForwardedRequest`). Lifetime rule: owns
    /// its fields.
    package enum Outcome: Sendable {
        /// The request succeeded with nothing to report: `ping`, `unsub`, `create`,
        /// `complete`, `error`, `delete`, `auth`.
        case done
        /// A `pub` with a `ref` succeeded: how many subscriptions received the value.
        case published(receivers: Int)
        /// A `sub` succeeded: the subscription's sid, and whether it resumed where `from`
        /// asked (nil without `from`).
        case subscribed(sid: String, resumed: Bool?)
        /// A `list` succeeded: the subjects it names, in order.
        case subjects([SubjectListing])
        /// A `stats` succeeded: the server's figures when it was asked (boxed: the
        /// other replies stay small).
        indirect case stats(ServerStatsReport)
        /// A request failed: the error the line reports.
        case failed(ProtocolError)
    }

    package init(ref: RawJSON?, _ outcome: Outcome) {
        self.ref = ref
        self.outcome = outcome
    }

    /// Whether the request succeeded: every outcome but `failed`.
    var isSuccess: Bool {
        if case .failed = outcome { return false }
        return true
    }
}

extension ServerLineWriter {
    /// `reply`'s line, the one encoding of a reply: `{"ok":true[,"ref":R]` and the members
    /// its outcome adds, or `{"ok":false[,"ref":R],"code":C,"message":M[,"stage":N]`. A
    /// caller may add members before it takes `finish()` (an HTTP error answer's).
    package static func reply(_ reply: SessionReply) -> ServerLineWriter {
        var line = Self.reply(ok: reply.isSuccess, ref: reply.ref)
        switch reply.outcome {
        case .done: break
        case .published(let receivers): line.member("receivers", integer: receivers)
        case .subscribed(let sid, let resumed):
            line.member("sid", string: sid)
            if let resumed { line.member("resumed", bool: resumed) }
        case .subjects(let entries): line.member("subjects") { $0.writeSubjectList(entries) }
        case .stats(let report): report.writeMembers(into: &line)
        case .failed(let error): line.members(of: error)
        }
        return line
    }
}
