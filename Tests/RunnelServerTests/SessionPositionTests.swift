import RunnelJSON
import Testing

@testable import RunnelServer

/// Positions and resume (docs/protocol.md, "Positions and resume"), in process.
@Suite struct SessionPositionTests {
    /// The subject's epoch, read from `list`.
    private func position(of subject: String, _ client: SessionClient) -> String {
        let line = client.send(#"{"op":"list","prefix":"\#(subject)"}"#).first ?? ""
        guard let range = line.range(of: #""pos":""#) else { return "" }
        let rest = line[range.upperBound...]
        return String(rest[..<rest.firstIndex(of: "\"")!])
    }

    @Test(arguments: [0, 7, 9, 10, 99, 100, 12_345, 999_999_999_999, UInt64.max] as [UInt64])
    func sequenceNumbersAreWrittenInDecimal(seq: UInt64) {
        let written = withUnsafeTemporaryAllocation(byteCount: 20, alignment: 1) { buffer in
            String(decoding: buffer[..<JSONWriter.writeDecimal(seq, into: buffer)], as: UTF8.self)
        }
        #expect(written == String(seq))
    }

    @Test func eventsCarryTheirPositionWhenAskedAndListShowsTheLatest() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"create","subject":"r","kind":"replay","capacity":3}"#)
        let epoch = position(of: "r", client).split(separator: ":")[0]
        #expect(position(of: "r", client) == "\(epoch):0")
        client.send(#"{"op":"sub","subject":"r","sid":"p","positions":true}"#, #"{"op":"sub","subject":"r","sid":"n"}"#)
        #expect(
            client.send(#"{"op":"pub","subject":"r","value":"a"}"#) == [
                #"{"ev":"next","sid":"p","value":"a","pos":"\#(epoch):1"}"#, #"{"ev":"next","sid":"n","value":"a"}"#,
            ])
        #expect(position(of: "r", client) == "\(epoch):1")
        #expect(client.send(#"{"op":"list","prefix":"r"}"#).first?.contains(#""durable":false"#) == true)
    }

    @Test func aBehaviorsInitialValueHasSeqZeroAndANewSubjectANewEpoch() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"create","subject":"b","kind":"behavior","value":1}"#)
        let first = position(of: "b", client)
        #expect(first.hasSuffix(":0"))
        #expect(
            client.send(#"{"op":"sub","subject":"b","sid":"x","positions":true}"#) == [
                #"{"ok":true,"sid":"x"}"#, #"{"ev":"next","sid":"x","value":1,"pos":"\#(first)"}"#,
            ])
        client.send(#"{"op":"delete","subject":"b"}"#, #"{"op":"create","subject":"b","kind":"behavior"}"#)
        let second = position(of: "b", client)
        #expect(second.hasSuffix(":0") && second != first)
    }

    @Test func resumeFromAReplayDeliversExactlyTheValuesAfter() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"create","subject":"r","kind":"replay","capacity":3}"#)
        for value in 1...5 { client.send(#"{"op":"pub","subject":"r","value":\#(value)}"#) }
        let epoch = position(of: "r", client).split(separator: ":")[0]
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"a","from":"\#(epoch):3"}"#) == [
                #"{"ok":true,"sid":"a","resumed":true}"#, #"{"ev":"next","sid":"a","value":4,"pos":"\#(epoch):4"}"#,
                #"{"ev":"next","sid":"a","value":5,"pos":"\#(epoch):5"}"#,
            ])
        // 2 is no longer retained (capacity 3 keeps 3, 4, 5): the usual replay instead.
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"b","from":"\#(epoch):1"}"#) == [
                #"{"ok":true,"sid":"b","resumed":false}"#, #"{"ev":"next","sid":"b","value":3,"pos":"\#(epoch):3"}"#,
                #"{"ev":"next","sid":"b","value":4,"pos":"\#(epoch):4"}"#,
                #"{"ev":"next","sid":"b","value":5,"pos":"\#(epoch):5"}"#,
            ])
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"c","from":"\#(epoch):2"}"#).first
                == #"{"ok":true,"sid":"c","resumed":true}"#)
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"d","from":"\#(epoch):5"}"#) == [
                #"{"ok":true,"sid":"d","resumed":true}"#
            ])
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"e","from":"\#(epoch):6"}"#).first?.contains(
                #""resumed":false"#) == true)
        #expect(
            client.send(#"{"op":"sub","subject":"r","sid":"f","from":"other:5"}"#).first?.contains(#""resumed":false"#)
                == true)
    }

    @Test func resumeFromAPlainSubjectOnlyWhenNothingWasPublishedAfter() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"pub","subject":"p","value":1}"#)
        let latest = position(of: "p", client)
        #expect(
            client.send(#"{"op":"sub","subject":"p","sid":"a","from":"\#(latest)"}"#) == [
                #"{"ok":true,"sid":"a","resumed":true}"#
            ])
        client.send(#"{"op":"unsub","sid":"a"}"#)
        let epoch = latest.split(separator: ":")[0]
        client.send(#"{"op":"pub","subject":"p","value":2}"#)
        #expect(
            client.send(#"{"op":"sub","subject":"p","sid":"b","from":"\#(latest)"}"#) == [
                #"{"ok":true,"sid":"b","resumed":false}"#
            ])
        #expect(
            client.send(#"{"op":"pub","subject":"p","value":3}"#) == [
                #"{"ev":"next","sid":"b","value":3,"pos":"\#(epoch):3"}"#
            ])
    }

    @Test func resumeFromABehaviorAndThenTheTerminalEvent() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"create","subject":"b","kind":"behavior","value":0}"#)
        client.send(#"{"op":"pub","subject":"b","value":1}"#, #"{"op":"pub","subject":"b","value":2}"#)
        client.send(#"{"op":"complete","subject":"b"}"#)
        let epoch = position(of: "b", client).split(separator: ":")[0]
        #expect(
            client.send(#"{"op":"sub","subject":"b","sid":"x","from":"\#(epoch):1"}"#) == [
                #"{"ok":true,"sid":"x","resumed":true}"#, #"{"ev":"next","sid":"x","value":2,"pos":"\#(epoch):2"}"#,
                #"{"ev":"completed","sid":"x"}"#,
            ])
        #expect(
            client.send(#"{"op":"sub","subject":"b","sid":"y","from":"\#(epoch):0"}"#).first?.contains(
                #""resumed":false"#) == true)
    }

    @Test func fromOnAPatternOrMalformedIsBadRequest() {
        let harness = SessionHarness()
        let client = harness.connect()
        for request in [
            #"{"op":"sub","subject":"a.*","from":"e:1"}"#, #"{"op":"sub","subject":"a","from":"e1"}"#,
            #"{"op":"sub","subject":"a","from":"e:-1"}"#, #"{"op":"sub","subject":"a","from":":1"}"#,
            #"{"op":"sub","subject":"a","from":"e!:1"}"#, #"{"op":"sub","subject":"a","from":5}"#,
            #"{"op":"sub","subject":"a","positions":"yes"}"#,
        ] {
            #expect(client.send(request).first?.contains(#""code":"bad_request""#) == true, "\(request)")
        }
    }

    @Test func stagesKeepTheProvenanceOfTheirValues() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"create","subject":"s","kind":"replay","capacity":10}"#)
        let epoch = position(of: "s", client).split(separator: ":")[0]
        client.send(
            #"{"op":"sub","subject":"s","sid":"m","positions":true,"ops":[{"op":"filter","expr":". > 1"},{"op":"map","expr":". * 10"}]}"#,
            #"{"op":"sub","subject":"s","sid":"w","positions":true,"ops":[{"op":"startWith","value":0}]}"#,
            #"{"op":"sub","subject":"s","sid":"c","positions":true,"ops":[{"op":"scan","start":0,"expr":"$acc + ."}]}"#,
            #"{"op":"sub","subject":"s","sid":"o","positions":true,"ops":[{"op":"merge","subjects":["other"]}]}"#)
        let lines = client.send(#"{"op":"pub","subject":"s","value":1}"#, #"{"op":"pub","subject":"s","value":2}"#)
        #expect(lines.contains(#"{"ev":"next","sid":"m","value":20,"pos":"\#(epoch):2"}"#))
        #expect(!lines.contains { $0.contains(#""sid":"m","value":10"#) })
        #expect(lines.contains(#"{"ev":"next","sid":"c","value":3,"pos":"\#(epoch):2"}"#))
        #expect(lines.contains(#"{"ev":"next","sid":"o","value":2,"pos":"\#(epoch):2"}"#))
        // A value made from none of the subject's values, and one of another subject, carry none.
        #expect(
            client.send(#"{"op":"pub","subject":"other","value":9}"#) == [#"{"ev":"next","sid":"o","value":9}"#])
    }

    @Test func startWithsValueCarriesNoPosition() {
        let harness = SessionHarness()
        let client = harness.connect()
        #expect(
            client.send(#"{"op":"sub","subject":"z","sid":"w","positions":true,"ops":[{"op":"startWith","value":0}]}"#)
                == [
                    #"{"ok":true,"sid":"w"}"#, #"{"ev":"next","sid":"w","value":0}"#,
                ])
    }

    @Test func patternEventsCarryThePositionInTheirOwnSubject() {
        let harness = SessionHarness()
        let client = harness.connect()
        client.send(#"{"op":"sub","subject":"t.*","sid":"p","positions":true}"#)
        let lines = client.send(#"{"op":"pub","subject":"t.a","value":1}"#, #"{"op":"pub","subject":"t.b","value":2}"#)
        let a = position(of: "t.a", client)
        let b = position(of: "t.b", client)
        #expect(
            lines == [
                #"{"ev":"next","sid":"p","subject":"t.a","value":1,"pos":"\#(a)"}"#,
                #"{"ev":"next","sid":"p","subject":"t.b","value":2,"pos":"\#(b)"}"#,
            ])
    }

    @Test func durableNeedsDataDirAndAKindThatRetains() {
        let harness = SessionHarness()
        let client = harness.connect()
        #expect(
            client.send(#"{"op":"create","subject":"d","kind":"replay","durable":true}"#).first?.contains(
                #""code":"bad_request","message":"durable subjects need 'data_dir'"#) == true)
        #expect(
            client.send(#"{"op":"create","subject":"d","kind":"subject","durable":true}"#).first?.contains(
                "bad_request") == true)
        #expect(client.send(#"{"op":"create","subject":"d","kind":"replay","durable":false}"#) == [#"{"ok":true}"#])
    }
}
