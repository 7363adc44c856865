package faultplan

import "github.com/atoll-runtime/atoll/internal/actors"

func actorsRuleID(i int) actors.RuleID { return actors.RuleID(i) }
