package pgtest

import "fmt"

// HoldPayment is the declared change that the tests of every package use
// (issue 25's example): hold captured payments of SHOP.payments, keyed by
// payment_id, with a tenant, a version, an expect column, a when, a set
// and a set_from_target.
func HoldPayment(shop string) string {
	return fmt.Sprintf(`{"name": "hold_payment", "table": "%s.payments", "key": "payment_id", "tenant": "merchant_id",
	  "version": "lock_version", "expect": ["amount_cents"], "when": {"status": "captured"},
	  "set": {"status": "on_hold"}, "set_from_target": {"hold_reason": "reason"}}`, shop)
}
