package costs

import (
	"fmt"
	"math/big"
	"strings"
)

// Price is one price AWS publishes: Amount dollars Per so many units.
type Price struct {
	// What is what is priced.
	What string
	// Amount is the price in dollars, as a decimal ("0.0000133334").
	Amount string
	// Per is how many units the amount is for (1, 10000, 1000000).
	Per int64
	// Unit names the unit, as the docs say it ("request", "GB-second").
	Unit string
	// Note is what the price page adds that matters here (a tier, a free
	// allowance), or "".
	Note string
	// Source names the page the price is from.
	Source string
	// Taken is when it was read there.
	Taken string
}

// The prices the cost tables use: us-east-1, as the pages published
// them when taken. Check them for your region before relying on the sums;
// when AWS changes one, change it here (and Taken) and run make regen.
var (
	LambdaRequests = Price{What: "Lambda requests", Amount: "0.20", Per: 1_000_000, Unit: "request", Source: "AWS Lambda pricing", Taken: "2026-12-01"}
	// Arm (Graviton) functions' duration, the first tier (6 billion
	// GB-seconds a month).
	LambdaArmDuration = Price{What: "Lambda duration", Amount: "0.0000133334", Per: 1, Unit: "GB-second", Note: "arm64", Source: "AWS Lambda pricing", Taken: "2026-12-01"}
	HTTPAPIRequests   = Price{What: "API Gateway HTTP API requests", Amount: "1.00", Per: 1_000_000, Unit: "request", Note: "the first 300 million a month; a request is counted per 512 KB",
		Source: "Amazon API Gateway pricing", Taken: "2026-12-01"}
	RESTAPIRequests = Price{What: "API Gateway REST API requests", Amount: "3.50", Per: 1_000_000, Unit: "request", Note: "the first 333 million a month",
		Source: "Amazon API Gateway pricing", Taken: "2026-12-01"}
	// On-demand request units, after DynamoDB's November 2024 reduction.
	DynamoDBWrites  = Price{What: "DynamoDB writes", Amount: "0.625", Per: 1_000_000, Unit: "write request unit", Source: "Amazon DynamoDB pricing, on-demand", Taken: "2026-12-01"}
	DynamoDBReads   = Price{What: "DynamoDB reads", Amount: "0.125", Per: 1_000_000, Unit: "read request unit", Source: "Amazon DynamoDB pricing, on-demand", Taken: "2026-12-01"}
	DynamoDBStorage = Price{What: "DynamoDB storage", Amount: "0.25", Per: 1, Unit: "GB-month", Note: "the first 25 GB free", Source: "Amazon DynamoDB pricing, on-demand", Taken: "2026-12-01"}
	DynamoDBPITR    = Price{What: "DynamoDB point-in-time recovery", Amount: "0.20", Per: 1, Unit: "GB-month", Note: "continuous backups", Source: "Amazon DynamoDB pricing, on-demand", Taken: "2026-12-01"}
	KMSRequests     = Price{What: "KMS requests", Amount: "0.03", Per: 10_000, Unit: "request", Source: "AWS Key Management Service pricing", Taken: "2026-12-01"}
	KMSKeys         = Price{What: "a KMS key", Amount: "1.00", Per: 1, Unit: "key-month", Source: "AWS Key Management Service pricing", Taken: "2026-12-01"}
	// API Gateway's data transfer out is billed at EC2's rates.
	DataTransferOut = Price{What: "data transfer out", Amount: "0.09", Per: 1, Unit: "GB", Note: "out to the internet, beyond the account's first 100 GB a month",
		Source: "Amazon EC2 on-demand pricing, data transfer", Taken: "2026-12-01"}
	LogsIngested = Price{What: "CloudWatch Logs ingestion", Amount: "0.50", Per: 1, Unit: "GB", Note: "ingested", Source: "Amazon CloudWatch pricing", Taken: "2026-12-01"}
	LogsStored   = Price{What: "CloudWatch Logs storage", Amount: "0.03", Per: 1, Unit: "GB-month", Note: "stored", Source: "Amazon CloudWatch pricing", Taken: "2026-12-01"}
	Metrics      = Price{What: "CloudWatch metrics", Amount: "0.30", Per: 1, Unit: "metric-month", Note: "the first 10,000", Source: "Amazon CloudWatch pricing", Taken: "2026-12-01"}
	Alarms       = Price{What: "CloudWatch alarms", Amount: "0.10", Per: 1, Unit: "alarm-month", Note: "standard resolution", Source: "Amazon CloudWatch pricing", Taken: "2026-12-01"}
)

// AllPrices is every price, in the order the price list shows them.
var AllPrices = []*Price{&LambdaRequests, &LambdaArmDuration, &HTTPAPIRequests, &RESTAPIRequests, &DynamoDBWrites, &DynamoDBReads,
	&DynamoDBStorage, &DynamoDBPITR, &KMSRequests, &KMSKeys, &DataTransferOut, &LogsIngested, &LogsStored, &Metrics, &Alarms}

// GB is how many bytes a GB is in the sums: 10^9, the larger of the two
// readings of the pages' "GB" (AWS bills a GB-second's GB as 1024 MB).
const GB = 1_000_000_000

// rat is the price of one unit, exactly.
func (p Price) rat() *big.Rat {
	r, ok := new(big.Rat).SetString(p.Amount)
	if !ok {
		panic("costs: price amount is not a decimal: " + p.Amount)
	}
	return r.Quo(r, new(big.Rat).SetInt64(p.Per))
}

// Of is the price of n units, n exact (a rational: bytes over GB, half
// units, GB-seconds).
func (p Price) Of(n *big.Rat) *big.Rat { return new(big.Rat).Mul(p.rat(), n) }

// Text is how a table shows the price: "$0.20 per million requests".
func (p Price) Text() string {
	per := ""
	switch p.Per {
	case 1:
		per = "per " + p.Unit
	case 10_000:
		per = "per 10,000 " + p.Unit + "s"
	case 1_000_000:
		per = "per million " + p.Unit + "s"
	default:
		per = fmt.Sprintf("per %d %ss", p.Per, p.Unit)
	}
	return "$" + p.Amount + " " + per
}

// Dollars rounds an amount to cents, half up, and writes it "$1.25"; an
// amount above zero that rounds to nothing is "under $0.01".
func Dollars(r *big.Rat) string {
	if r.Sign() < 0 {
		panic("costs: a negative amount")
	}
	cents := new(big.Rat).Mul(r, big.NewRat(100, 1))
	// Half up: floor(cents + 1/2).
	cents.Add(cents, big.NewRat(1, 2))
	n := new(big.Int).Quo(cents.Num(), cents.Denom())
	if n.Sign() == 0 && r.Sign() > 0 {
		return "under $0.01"
	}
	s := n.String()
	if len(s) < 3 {
		s = strings.Repeat("0", 3-len(s)) + s
	}
	return "$" + group(s[:len(s)-2]) + "." + s[len(s)-2:]
}

// group writes thousands separators into a string of digits.
func group(digits string) string {
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Count writes a count with thousands separators.
func Count(n int) string { return group(fmt.Sprint(n)) }

// Int is n as an exact number.
func Int(n int) *big.Rat { return new(big.Rat).SetInt64(int64(n)) }

// Sum adds amounts.
func Sum(rs ...*big.Rat) *big.Rat {
	s := new(big.Rat)
	for _, r := range rs {
		s.Add(s, r)
	}
	return s
}

// Million is n a million times.
func Million(n *big.Rat) *big.Rat { return new(big.Rat).Mul(n, big.NewRat(1_000_000, 1)) }
