/// An error for tests to send through signals and recognise by its code.
///
/// A value, safe on any thread. Its description is `TestError(code)`, so an event history
/// written as text reads `error(TestError(1))`.
public struct TestError: Error, Equatable, CustomStringConvertible {
    public let code: Int

    public init(_ code: Int = 1) { self.code = code }

    public var description: String { "TestError(\(code))" }
}
