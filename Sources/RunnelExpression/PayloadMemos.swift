import RunnelProtocol

/// The outcomes a `Payload` keeps of expressions that depend on its value alone, or on the
/// value and `$subject` (then one per subject): when many subscribers run the same chain, the
/// first computes and encodes each result and the others share it. An evaluation error is
/// kept too (the same expression on the same value under the same budget fails the same way),
/// so that an expression over its budget costs the loop that budget once per value, not once
/// per subscriber.
///
/// Two slots are stored flat (a `filter` + `map` chain; flat fields are compared in place,
/// where reading a struct out of an optional retained each of its references); up to
/// `maxMemos` in all when several chains read the value, past which the oldest extra one is
/// forgotten. An expression is found by identity first (the server's chains share one object
/// per identical expression: `ExpressionInterner`), then by source and budget (expressions
/// compiled apart, as in a chain compiled outside a server).
///
/// Loop thread only, like its payload; made when the payload keeps its first outcome.
package final class PayloadMemos {
    private var expression0: CompiledExpression?
    private var label0: SubjectLabel?
    private var outcome0: Result<Payload, ExpressionError>?
    private var expression1: CompiledExpression?
    private var label1: SubjectLabel?
    private var outcome1: Result<Payload, ExpressionError>?
    private var more: [Memo]?

    /// The most outcomes one value keeps.
    package static let maxMemos = 16

    private struct Memo {
        package let expression: CompiledExpression
        /// The subject the outcome is for, when the expression reads `$subject`.
        package let label: SubjectLabel?
        package let outcome: Result<Payload, ExpressionError>
    }

    /// The outcome kept for `expression` on the value published to `label`'s subject.
    @inline(__always)
    package func outcome(of expression: CompiledExpression, label: SubjectLabel) -> Result<Payload, ExpressionError>? {
        let bySubject = !expression.dependsOnInputOnly
        if expression0 === expression, Self.sameSubject(label0, label, bySubject) { return outcome0 }
        if expression1 === expression, Self.sameSubject(label1, label, bySubject) { return outcome1 }
        if let found = more?.first(where: {
            $0.expression === expression && Self.sameSubject($0.label, label, bySubject)
        }) {
            return found.outcome
        }
        if let expression0, Self.sameSubject(label0, label, bySubject), Self.sameSource(expression0, expression) {
            return outcome0
        }
        if let expression1, Self.sameSubject(label1, label, bySubject), Self.sameSource(expression1, expression) {
            return outcome1
        }
        return more?.first(where: {
            Self.sameSubject($0.label, label, bySubject) && Self.sameSource($0.expression, expression)
        })?.outcome
    }

    /// Keeps `outcome` as `expression`'s on the value published to `label`'s subject.
    package func keep(
        _ outcome: Result<Payload, ExpressionError>, of expression: CompiledExpression, label: SubjectLabel
    ) {
        let key = expression.dependsOnInputOnly ? nil : label
        if expression0 == nil {
            (expression0, label0, outcome0) = (expression, key, outcome)
        } else if expression1 == nil {
            (expression1, label1, outcome1) = (expression, key, outcome)
        } else {
            var memos = more ?? []
            more = nil  // leaves `memos` uniquely referenced, so it grows in place
            if memos.count == Self.maxMemos - 2 { memos.removeFirst() }
            memos.append(Memo(expression: expression, label: key, outcome: outcome))
            more = memos
        }
    }

    /// Whether a memo kept for `stored` (nil: for any subject) serves `label`'s subject.
    @inline(__always)
    private static func sameSubject(_ stored: SubjectLabel?, _ label: SubjectLabel, _ bySubject: Bool) -> Bool {
        bySubject ? stored === label : stored == nil
    }

    /// Whether two expressions compiled apart are the same: source and budget.
    private static func sameSource(_ one: CompiledExpression, _ other: CompiledExpression) -> Bool {
        one.budget == other.budget && one.source == other.source
    }
}
