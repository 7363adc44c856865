package atoll

// JobIDForTest is the running driver's job id in hex ("" when atoll is
// not running): tests match it with the atoll.job_id of exported spans.
func JobIDForTest() string {
	rt := current()
	if rt == nil {
		return ""
	}
	return rt.jobID.String()
}

// BorrowReportsReceivedForTest counts the standalone borrow reports the
// running driver's owner received.
func BorrowReportsReceivedForTest() uint64 {
	rt := current()
	if rt == nil {
		return 0
	}
	return rt.borrowReportsIn.Load()
}
