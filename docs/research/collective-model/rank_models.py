"""Rank models for collectives on NVSwitch: predict n ranks from n/2 and 2n, per size, six ways.
  python3 rank_models.py ../../../../shared/data/measured/collective_{a100,b200}*.csv
"""
import csv, math, collections, sys
def load(f):
    c=collections.defaultdict(dict)
    for r in csv.DictReader(open(f)):
        c[(r['op'],int(r['ranks']))].setdefault(int(r['bytes']),[]).append(float(r['time_ns']))
    return {k:dict((b,sum(v)/len(v)) for b,v in d.items()) for k,d in c.items()}
def q(v,x): v=sorted(v); return v[int(x*(len(v)-1))]
def g(op,n): return 2*(n-1)/n if op=='all_reduce' else (n-1)/n
def solve(f1,f2,t1,t2,h1,h2):
    # t = a f + c h
    det=f1*h2-f2*h1; a=(t1*h2-t2*h1)/det; c=(f1*t2-f2*t1)/det; return a,c
def variants(op,n1,n2,n,a,b,by):
    t1,t2=a[by],b[by]; out={}
    wl=(math.log(n)-math.log(n1))/(math.log(n2)-math.log(n1)); wn=(n-n1)/(n2-n1)
    out['log t in log n']=math.exp(math.log(t1)+wl*(math.log(t2)-math.log(t1)))
    out['log t in n']=math.exp(math.log(t1)+wn*(math.log(t2)-math.log(t1)))
    out['lin n']=t1+(t2-t1)*wn
    # decomposition: latency = time at min size, bw part = t - L
    L1=a[min(a)]; L2=b[min(b)]; L=L1+wn*(L2-L1)
    r1=max(t1-L1,1e-9)/g(op,n1); r2=max(t2-L2,1e-9)/g(op,n2)
    r=math.exp(math.log(r1)+wl*(math.log(r2)-math.log(r1)))
    out['L lin n + bw log n']=L+r*g(op,n)
    # busbw-normalised time interpolated: t/g in log n
    s1=t1/g(op,n1); s2=t2/g(op,n2)
    bwt=math.exp(math.log(s1)+wl*(math.log(s2)-math.log(s1)))*g(op,n)
    phi=min(1,(L/out['lin n']))
    out['blend phi']=math.exp(phi*math.log(out['lin n'])+(1-phi)*math.log(bwt))
    out['geo(lin n, loglog)']=math.sqrt(out['lin n']*out['log t in log n'])
    return out
for f in sys.argv[1:]:
    cur=load(f); E=collections.defaultdict(list)
    for (op,n),pts in cur.items():
        n1,n2=n//2,n*2
        if (op,n1) not in cur or (op,n2) not in cur: continue
        a=cur[(op,n1)]; b=cur[(op,n2)]
        for by,t in pts.items():
            for k,v in variants(op,n1,n2,n,a,b,by).items(): E[k].append(abs(v-t)/t)
    print(f.split('/')[-1])
    for k,v in E.items(): print('   %-20s n=%d median %.2f%% p90 %.2f%%'%(k,len(v),100*q(v,.5),100*q(v,.9)))
