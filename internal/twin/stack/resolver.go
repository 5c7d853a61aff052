package stack

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/deploy"
)

// localDeployment renders the function specs (internal/deploy) against the local services, as
// the CDK stack renders them against AWS: every resource a grant names becomes the ARN the
// twin's front door sees on a request, and every variable the value a deployed function would
// get.
type localDeployment struct {
	st *Stack
	// streams are the tables' streams by logical table name, as DynamoDB Local names them.
	streams map[string]string
	// secretARNs are the local Secrets Manager's ARNs by deploy secret name.
	secretARNs map[string]string
}

var _ deploy.Resolver = (*localDeployment)(nil)

func (d *localDeployment) ARN(fn string, r deploy.Resource) string {
	switch r.Kind {
	case deploy.Table:
		return d.st.Gate.TableARN(d.st.Names.Of(r.Name))
	case deploy.TableIndex:
		return d.st.Gate.TableARN(d.st.Names.Of(r.Name)) + "/index/" + r.Index
	case deploy.TableStream:
		return d.streams[r.Name]
	case deploy.StateMachine:
		return d.st.StateMachineARN
	case deploy.Executions:
		return fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:*", Region, AccountID, StateMachineName)
	case deploy.Secret:
		return d.secretARNs[r.Name]
	case deploy.EventBus:
		return d.st.Gate.EventBusARN(EventBusName)
	case deploy.Queue:
		return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", Region, AccountID, r.Name)
	case deploy.LogGroup:
		return fmt.Sprintf("arn:aws:logs:%s:%s:log-group:/aws/lambda/%s:*", Region, AccountID, fn)
	case deploy.Any:
		return "*"
	}
	panic(fmt.Sprintf("stack: no local ARN for resource kind %q", r.Kind))
}

func (d *localDeployment) Setting(name string) string {
	cfg := d.st.cfg
	switch name {
	case config.EnvStage:
		return "local"
	case config.EnvTablePrefix:
		return d.st.Names.Prefix
	case config.EnvStateMachineARN:
		return d.st.StateMachineARN
	case config.EnvEventBusName:
		return EventBusName
	case config.EnvLateSuccessPolicy:
		return cfg.LateSuccessPolicy
	case config.EnvHoldSeconds:
		return strconv.Itoa(int(cfg.Hold.Seconds()))
	case config.EnvMaxSeats:
		return strconv.Itoa(cfg.MaxSeats)
	case config.EnvAdmissionLeaseSeconds:
		return strconv.Itoa(int(cfg.AdmissionLease.Seconds()))
	case config.EnvMaxActiveReservations:
		return strconv.Itoa(cfg.MaxActiveReservations)
	case config.EnvSweepGraceSeconds:
		return strconv.Itoa(int(cfg.SweepGrace.Seconds()))
	case config.EnvMetricsNamespace:
		return config.DefaultMetricsNamespace
	case config.EnvAllowedOrigins:
		return strings.Join(cfg.AllowedOrigins, ",")
	}
	panic(fmt.Sprintf("stack: no local value for setting %s", name))
}
