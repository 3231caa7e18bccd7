import RunnelProtocol
import Testing

/// `since` and `until`'s times (`PublishTime`): Unix ms, and RFC 3339 read exactly.
@Suite struct PublishTimeTests {
    @Test(
        arguments: [
            ("1970-01-01T00:00:00Z", 0),
            ("1970-01-01t00:00:00.5z", 500),
            ("2026-12-02T14:00:00Z", 1_796_220_000_000),
            ("2026-12-02T15:30:00.250+01:30", 1_796_220_000_250),
            ("2026-12-02 09:00:00.123456-05:00", 1_796_220_000_123),
            ("2024-02-29T00:00:00Z", 1_709_164_800_000),
            ("2000-03-01T00:00:00Z", 951_868_800_000),
            ("9999-12-31T23:59:59.999Z", 253_402_300_799_999),
        ] as [(String, Int64)])
    func rfc3339DateTimesAreReadToTheMillisecond(text: String, milliseconds: Int64) {
        #expect(PublishTime.milliseconds(rfc3339: text) == milliseconds)
    }

    @Test(arguments: [
        "", "2026-12-02", "2026-12-02T14:00:00", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
        "2026-12-02T24:00:00Z", "2026-12-02T14:00:00.Z", "2026-12-02T14:00:00+0100", "1969-12-31T23:59:59Z",
        "2026-12-02T14:00:00Z ", "yesterday",
    ])
    func otherTextIsNotATime(text: String) {
        #expect(PublishTime.milliseconds(rfc3339: text) == nil)
    }

    @Test func numbersAreUnixMillisecondsFromZero() {
        #expect(PublishTime.milliseconds(1_796_220_000_000.7) == 1_796_220_000_000)
        #expect(PublishTime.milliseconds(-1) == nil)
        #expect(PublishTime.milliseconds(.infinity) == nil)
        #expect(PublishTime.milliseconds(1e300) == nil)
    }
}
