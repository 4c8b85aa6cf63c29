/// The two conversions of a `Duration` the core needs and the standard library does not give, written (and
/// their clamping tested) once for the core and its testing product. Modules that work over the core's public
/// API (the fleet) cannot use them.
extension Duration {
    /// This duration in whole nanoseconds, clamped to `0...Int.max`: a negative one is no wait at all and
    /// a huge one the longest wait there is, never an overflow (a delay may come from outside input).
    package var clampedNanoseconds: Int {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (whole, overflow) = Int(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (total, sumOverflow) = whole.addingReportingOverflow(Int(attoseconds / 1_000_000_000))
        return sumOverflow ? .max : max(0, total)
    }

    /// This duration in seconds, as `TimeInterval` counts them.
    package var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
